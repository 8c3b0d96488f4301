/**
 * A Temporal server that authorizes every call as a secured cluster does: Temporal's own default authorizer and JWT
 * claim mapper, so a bearer token's `permissions` claim decides what a caller may do: `<namespace>:<role>` with the
 * roles read, write, worker and admin, and `temporal-system:admin` for the whole cluster. One process of the cluster tier's server binary (1.31.2) on SQLite in memory, a JWKS served here.
 * For the paths where Temporal refuses the watcher something for real, e.g. registering search attributes without
 * the admin role, as on Temporal Cloud.
 */
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import Long from 'long';
import { toYaml } from '../../dev/cluster/server-config.js';
import { freePorts } from '../../dev/cluster/ports.js';
import { managedProcess } from '../../dev/cluster/process.js';
import { ensureClusterBinaries } from '../../dev/temporal/provision-cluster.js';

export interface AuthorizedServer {
  /** The frontend, host:port. */
  readonly address: string;
  /** A signed JWT (no `Bearer ` prefix) with these `permissions`, e.g. `['default:write']`: an API key. */
  token(permissions: string[]): string;
  /** Registers `namespace` (as a system admin) and waits until the frontend serves it. */
  createNamespace(namespace: string): Promise<void>;
  /** A connection as a caller holding `permissions`; the caller closes it. */
  connect(permissions: string[]): Promise<Connection>;
  stop(): Promise<void>;
}

const KEY_ID = 'watcher-test';

/** Starts the server and the JWKS it trusts; resolves once its frontend listens. No namespace exists yet. */
export async function startAuthorizedServer(): Promise<AuthorizedServer> {
  const binary = ensureClusterBinaries().server.path;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-authorized-'));
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwks = JSON.stringify({
    keys: [{ ...publicKey.export({ format: 'jwk' }), kid: KEY_ID, alg: 'RS256', use: 'sig' }],
  });
  const keys = http.createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'application/json' }).end(jwks),
  );
  await new Promise<void>((resolve) => keys.listen(0, '127.0.0.1', resolve));
  const jwksUrl = `http://127.0.0.1:${(keys.address() as AddressInfo).port}/jwks.json`;

  const below = { below: 32_768 };
  const [frontend, frontendHttp, internalFrontend, history, matching, worker, ...membership] = await freePorts([
    ...Array<undefined>(6).fill(undefined),
    ...Array<{ below: number }>(5).fill(below),
  ]);
  const address = `127.0.0.1:${frontend}`;
  const configFile = path.join(dir, 'temporal-server.yaml');
  writeFileSync(
    configFile,
    toYaml(
      serverConfig({
        address,
        jwksUrl,
        ports: {
          frontend: frontend!,
          'internal-frontend': internalFrontend!,
          history: history!,
          matching: matching!,
          worker: worker!,
        },
        membership,
        frontendHttp: frontendHttp!,
      }),
    ),
  );
  const server = managedProcess({
    name: 'authorized temporal server',
    command: binary,
    args: ['--config-file', configFile, 'start', ...SERVICES.flatMap((name) => ['--service', name])],
    logFile: path.join(dir, 'temporal.log'),
    port: frontend,
  });
  const stop = async () => {
    await server.stop();
    await new Promise<void>((resolve) => keys.close(() => resolve()));
    keys.closeAllConnections();
    rmSync(dir, { recursive: true, force: true });
  };
  const token = (permissions: string[]) => jwt(privateKey, { sub: `test-${randomUUID().slice(0, 8)}`, permissions });
  const connect = (permissions: string[]) =>
    Connection.connect({ address, metadata: { authorization: `Bearer ${token(permissions)}` } });
  try {
    await server.start();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    address,
    token,
    connect,
    async createNamespace(namespace) {
      const connection = await connect(['temporal-system:admin']);
      try {
        await connection.workflowService.registerNamespace({
          namespace,
          workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(24 * 3600) },
        });
        // The frontend learns of a new namespace when its namespace cache next refreshes.
        const deadline = Date.now() + 30_000;
        for (;;) {
          try {
            await connection.operatorService.listSearchAttributes({ namespace });
            return;
          } catch (error) {
            if (Date.now() > deadline) throw error;
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        }
      } finally {
        await connection.close();
      }
    },
    stop,
  };
}

type Yaml = Parameters<typeof toYaml>[0];

/**
 * The services, all in one process. The internal frontend is the one the server's own worker service and the
 * frontend's internal calls (e.g. listing search attributes on SQL visibility) go through: it authorizes nothing,
 * as in a secured cluster, where only the public frontend faces callers.
 */
const SERVICES = ['frontend', 'internal-frontend', 'history', 'matching', 'worker'] as const;

/** The server configuration: all services in one process, SQLite in memory, the default authorizer and claim mapper. */
function serverConfig(input: {
  address: string;
  jwksUrl: string;
  ports: Record<(typeof SERVICES)[number], number>;
  membership: number[];
  frontendHttp: number;
}): { [key: string]: Yaml } {
  const sqlite = {
    sql: {
      pluginName: 'sqlite',
      databaseName: 'default',
      connectAddr: 'localhost',
      connectProtocol: 'tcp',
      connectAttributes: { mode: 'memory', cache: 'private' },
      maxConns: 1,
      maxIdleConns: 1,
      maxConnLifetime: '1h',
    },
  };
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'sqlite-default',
      visibilityStore: 'sqlite-visibility',
      numHistoryShards: 1,
      datastores: { 'sqlite-default': sqlite, 'sqlite-visibility': sqlite },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      authorization: {
        jwtKeyProvider: { keySourceURIs: [input.jwksUrl], refreshInterval: '1m' },
        permissionsClaimName: 'permissions',
        authorizer: 'default',
        claimMapper: 'default',
      },
    },
    services: Object.fromEntries(
      SERVICES.map((name, i) => [
        name,
        {
          rpc: {
            grpcPort: input.ports[name],
            membershipPort: input.membership[i]!,
            bindOnLocalHost: true,
            ...(name === 'frontend' ? { httpPort: input.frontendHttp } : {}),
          },
        },
      ]),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: input.address },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
  };
}

/** An RS256 JWT, as an identity provider would issue it to a worker. */
function jwt(privateKey: KeyObject, claims: Record<string, unknown>): string {
  const now = Math.floor(Date.now() / 1000);
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${encode({ alg: 'RS256', typ: 'JWT', kid: KEY_ID })}.${encode({ ...claims, iat: now, exp: now + 3600 })}`;
  return `${body}.${sign('sha256', Buffer.from(body), privateKey).toString('base64url')}`;
}
