/**
 * Connection options for an existing cluster (TLS, API key) from the configuration, and a reachability probe.
 */
import { readFileSync } from 'node:fs';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ClientPlugin,
  type ConnectionOptions,
} from '@temporalio/client';
import type { TemporalConnectionConfig } from '../config.js';

/** TLS and API-key options in the form both `Connection` and `NativeConnection` take. */
export function connectionOptions(config: TemporalConnectionConfig): { tls?: ConnectionOptions['tls']; apiKey?: string } {
  const tls = config.tls
    ? {
        serverRootCACertificate: config.tls.serverCaCertPath ? readFileSync(config.tls.serverCaCertPath) : undefined,
        clientCertPair:
          config.tls.clientCertPath && config.tls.clientKeyPath
            ? { crt: readFileSync(config.tls.clientCertPath), key: readFileSync(config.tls.clientKeyPath) }
            : undefined,
      }
    : undefined;
  return { ...(tls ? { tls } : {}), ...(config.apiKey ? { apiKey: config.apiKey } : {}) };
}

/**
 * gRPC retries of the bridge's calls: four attempts (about 0.6 s of backoff) instead of the SDK's ten (about 28 s,
 * cut only by the call's deadline), so that a request fails fast with 503 while Temporal is unreachable and the
 * sender retries it.
 */
const BRIDGE_GRPC_ATTEMPTS = 4;

/**
 * A client for the bridge. The connection is lazy so that the bridge starts (and answers 503) while Temporal is down.
 * `plugins`: e.g. the OpenTelemetry plugin when tracing is on.
 */
export async function connectClient(
  address: string,
  config: TemporalConnectionConfig,
  options: { plugins?: ClientPlugin[] } = {},
): Promise<Client> {
  const connection = Connection.lazy({
    address,
    ...connectionOptions(config),
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: BRIDGE_GRPC_ATTEMPTS }))],
  });
  return new Client({ connection, namespace: config.namespace, ...(options.plugins ? { plugins: options.plugins } : {}) });
}

/** True when the frontend answers within `timeoutMs`. */
export async function isReachable(client: Client, timeoutMs = 2_000): Promise<boolean> {
  try {
    await client.connection.withDeadline(Date.now() + timeoutMs, () =>
      client.connection.workflowService.getSystemInfo({}),
    );
    return true;
  } catch {
    return false;
  }
}
