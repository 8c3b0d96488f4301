/**
 * A real Temporal cluster on this machine, as docker-compose.yml runs it: PostgreSQL, the schema job
 * (deploy/temporal/setup-schema.sh), the server's four services as separate processes, the namespace job
 * (deploy/temporal/setup-namespace.sh) and the UI. Everything lives under one directory and survives a restart.
 */
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { allSearchAttributes } from '../../workflows/search-attributes.js';
import { ensureClusterBinaries, type ClusterBinaries } from '../temporal/provision-cluster.js';
import { searchAttributeTypeName } from '../../src/temporal/search-attributes.js';
import { ensureDevServer, ProvisionError } from '../temporal/provision.js';
import { ensurePortFree, freePorts } from './ports.js';
import { startPostgres, type Postgres } from './postgres.js';
import { managedProcess, runToEnd, type ManagedProcess } from './process.js';
import { TEMPORAL_SERVICES, temporalServerConfig, toYaml, type TemporalService } from './server-config.js';
import { writeUiConfig } from './ui-config.js';

const deployDir = fileURLToPath(new URL('../../deploy/temporal/', import.meta.url));

/** Ports of the cluster; any left out is a free port chosen at start. */
export interface TemporalClusterPorts {
  frontend?: number;
  ui?: number;
  postgres?: number;
}

export interface TemporalClusterOptions {
  /** Everything of the cluster: `postgres/` (data), `logs/`, generated configuration. Kept between runs. */
  dir: string;
  ports?: TemporalClusterPorts;
  namespace?: string;
  /** Namespace retention, as setup-namespace.sh takes it (default 720h, the compose default). */
  retention?: string;
  /** Fixed when the cluster is first created (default 4: the services share two cores here). */
  numHistoryShards?: number;
  binaries?: ClusterBinaries;
  /** The `temporal` CLI setup-namespace.sh runs (default: the dev server's, provision.ts). */
  cli?: string;
  /** Environment of the child processes and of provisioning (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

/** A running cluster. `stop()` stops the UI, the services (in reverse order of start) and PostgreSQL. */
export interface TemporalCluster {
  /** The frontend, for clients and workers: `127.0.0.1:<port>`. */
  readonly address: string;
  readonly uiUrl: string;
  readonly namespace: string;
  readonly postgres: Postgres;
  /** Each service is its own process: kill one, `start()` it again. */
  readonly services: Record<TemporalService, ManagedProcess>;
  readonly ui: ManagedProcess;
  readonly logDir: string;
  readonly configFile: string;
  stop(): Promise<void>;
}

const searchAttributeArgs = () => allSearchAttributes.map((key) => `${key.name}=${searchAttributeTypeName[key.type]!}`);

/** A directory of links with the names the compose jobs' image gives the tools, for the scripts' PATH. */
function toolsDir(dir: string, tools: Record<string, string>): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, target] of Object.entries(tools)) {
    const link = path.join(dir, name);
    rmSync(link, { force: true });
    symlinkSync(target, link);
  }
  return dir;
}

/** The ports of one start: the ones asked for, checked free; the others chosen free. */
interface ClusterPorts {
  postgres: number;
  frontend: number;
  ui: number;
  http: number;
  services: Record<TemporalService, { grpc: number; membership: number }>;
}

async function choosePorts(asked: TemporalClusterPorts = {}): Promise<ClusterPorts> {
  // Membership ports go to a SMALLINT column of the cluster_membership table: under 32768.
  const membership = { below: 32_768 };
  const [postgres, frontend, ui, http, ...internal] = await freePorts([
    asked.postgres,
    asked.frontend,
    asked.ui,
    undefined,
    ...TEMPORAL_SERVICES.flatMap((name) => (name === 'frontend' ? [membership] : [undefined, membership])),
  ]);
  // Before anything starts: a port asked for that something else holds (a dev server on the frontend's) is an error,
  // not a cluster whose clients talk to that something. Each process checks its own again as it starts.
  for (const [port, what] of [
    [postgres, 'postgres'],
    [frontend, 'frontend'],
    [ui, 'ui'],
  ] as const) {
    await ensurePortFree(port!, what);
  }
  const services = {} as ClusterPorts['services'];
  for (const name of TEMPORAL_SERVICES) {
    const grpc = name === 'frontend' ? frontend! : internal.shift()!;
    services[name] = { grpc, membership: internal.shift()! };
  }
  return { postgres: postgres!, frontend: frontend!, ui: ui!, http: http!, services };
}

/** What every step of a start shares. */
interface StartContext {
  options: TemporalClusterOptions;
  env: NodeJS.ProcessEnv;
  /** `env` with the tools the deploy scripts call on its PATH. */
  scriptEnv: NodeJS.ProcessEnv;
  binaries: ClusterBinaries;
  ports: ClusterPorts;
  logDir: string;
  log: (line: string) => void;
  /** What has started, to stop in reverse order. */
  stops: Array<{ name: string; stop: () => Promise<void> }>;
}

/** Starts the cluster and resolves once the namespace has its search attributes and the UI answers. */
export async function startTemporalCluster(options: TemporalClusterOptions): Promise<TemporalCluster> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`[cluster] ${line}\n`));
  const binaries = options.binaries ?? ensureClusterBinaries({ env, log });
  const cli = options.cli ?? devServerCli(env, log);
  const namespace = options.namespace ?? 'default';
  const logDir = path.join(options.dir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const ports = await choosePorts(options.ports);
  const scriptPath = toolsDir(path.join(options.dir, 'bin'), {
    temporal: cli,
    'temporal-sql-tool': binaries.sqlTool.path,
  });
  const scriptEnv = { ...env, PATH: `${scriptPath}${path.delimiter}${env.PATH ?? ''}` };
  const context: StartContext = { options, env, scriptEnv, binaries, ports, logDir, log, stops: [] };
  const stopAll = async () => {
    for (const { name, stop } of context.stops.splice(0).reverse()) {
      log(`stopping ${name}`);
      await stop().catch((error: unknown) => log(`while stopping ${name}: ${String(error)}`));
    }
  };
  try {
    const postgres = await startDatabase(context);
    const { services, configFile } = await startServices(context, postgres);
    const address = `127.0.0.1:${ports.frontend}`;
    log(`namespace ${namespace} and search attributes (deploy/temporal/setup-namespace.sh)`);
    await runToEnd({
      name: 'setup-namespace.sh',
      command: 'sh',
      args: [path.join(deployDir, 'setup-namespace.sh'), ...searchAttributeArgs()],
      env: {
        ...scriptEnv,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: namespace,
        TEMPORAL_NAMESPACE_RETENTION: options.retention ?? '720h',
      },
      logFile: path.join(logDir, 'setup-namespace.log'),
    });
    const { ui, uiUrl } = await startUi(context, address, namespace);
    return { address, uiUrl, namespace, postgres, services, ui, logDir, configFile, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** PostgreSQL, with the temporal and temporal_visibility databases created and migrated. */
async function startDatabase(context: StartContext): Promise<Postgres> {
  const { options, binaries, ports, logDir, log } = context;
  log(`PostgreSQL on 127.0.0.1:${ports.postgres} (data ${path.join(options.dir, 'postgres')})`);
  const postgres = await startPostgres({
    binDir: binaries.postgresBinDir.path,
    dataDir: path.join(options.dir, 'postgres'),
    port: ports.postgres,
    logFile: path.join(logDir, 'postgres.log'),
  });
  context.stops.push({ name: 'PostgreSQL', stop: () => postgres.stop() });
  log('creating and migrating the temporal and temporal_visibility databases (deploy/temporal/setup-schema.sh)');
  await runToEnd({
    name: 'setup-schema.sh',
    command: 'sh',
    args: [path.join(deployDir, 'setup-schema.sh')],
    env: {
      ...context.scriptEnv,
      SQL_PLUGIN: 'postgres12',
      SQL_HOST: postgres.host,
      SQL_PORT: String(postgres.port),
      SQL_USER: postgres.user,
      SQL_PASSWORD: postgres.password,
      SCHEMA_ROOT: binaries.schemaDir.path,
    },
    logFile: path.join(logDir, 'setup-schema.log'),
  });
  await forgetMembers(binaries.postgresBinDir.path, postgres, {
    env: context.env,
    logFile: path.join(logDir, 'setup-schema.log'),
    log,
  });
  return postgres;
}

/** The server's configuration written, and its four services started one by one, frontend first. */
async function startServices(context: StartContext, postgres: Postgres) {
  const { options, binaries, ports, logDir, log } = context;
  const configFile = path.join(options.dir, 'temporal-server.yaml');
  const config = temporalServerConfig({
    postgres,
    services: ports.services,
    frontendHttpPort: ports.http,
    numHistoryShards: options.numHistoryShards ?? 4,
    dynamicConfigFile: path.join(deployDir, 'dynamicconfig', 'watcher.yaml'),
  });
  writeFileSync(configFile, `# Written by expectations-watcher (dev/cluster) at every start.\n${toYaml(config)}`);
  const services = Object.fromEntries(
    TEMPORAL_SERVICES.map((name) => [
      name,
      managedProcess({
        name: `temporal ${name}`,
        command: binaries.server.path,
        args: ['--config-file', configFile, '--allow-no-auth', 'start', '--service', name],
        env: context.env,
        logFile: path.join(logDir, `temporal-${name}.log`),
        port: ports.services[name].grpc,
      }),
    ]),
  ) as Record<TemporalService, ManagedProcess>;
  for (const name of TEMPORAL_SERVICES) {
    log(`temporal ${name} on 127.0.0.1:${ports.services[name].grpc}`);
    await services[name].start();
    context.stops.push({ name: services[name].name, stop: () => services[name].stop() });
  }
  return { services, configFile };
}

async function startUi(context: StartContext, address: string, namespace: string) {
  const { options, binaries, ports, logDir, log } = context;
  const uiUrl = `http://127.0.0.1:${ports.ui}`;
  const uiRoot = writeUiConfig(path.join(options.dir, 'ui'), {
    frontend: address,
    port: ports.ui,
    namespace,
    url: uiUrl,
  });
  const ui = managedProcess({
    name: 'temporal ui',
    command: binaries.uiServer.path,
    args: ['--root', uiRoot, '--config', 'config', '--env', 'cluster', 'start'],
    env: context.env,
    logFile: path.join(logDir, 'temporal-ui.log'),
    port: ports.ui,
  });
  log(`Temporal UI on ${uiUrl}`);
  await ui.start();
  context.stops.push({ name: ui.name, stop: () => ui.stop() });
  return { ui, uiUrl };
}

/**
 * Deletes the membership rows of the services of an earlier start, none of which runs now. The rows of a run that was
 * killed look alive for 20 s more; a service that starts meanwhile tries to join them and waits out its 30 s join
 * timeout, and the cluster answers UNAVAILABLE for a minute. Without psql beside the server, the rows stay.
 */
async function forgetMembers(
  binDir: string,
  postgres: Postgres,
  { env, logFile, log }: { env: NodeJS.ProcessEnv; logFile: string; log: (line: string) => void },
): Promise<void> {
  const psql = path.join(binDir, 'psql');
  if (!existsSync(psql)) {
    log(
      `no ${psql}: the membership rows of an earlier start stay (after a kill, the next start waits up to a minute for them)`,
    );
    return;
  }
  await runToEnd({
    name: 'psql (deleting the cluster_membership rows of an earlier start)',
    command: psql,
    args: [
      '-h',
      postgres.host,
      '-p',
      String(postgres.port),
      '-U',
      postgres.user,
      '-d',
      'temporal',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      'DELETE FROM cluster_membership',
    ],
    env: { ...env, PGPASSWORD: postgres.password },
    logFile,
  });
}

function devServerCli(env: NodeJS.ProcessEnv, log: (line: string) => void): string {
  const source = ensureDevServer({ env, log, allowDownload: false });
  if (source.type !== 'existing-path' || !existsSync(source.path)) {
    throw new ProvisionError('the temporal CLI is needed for the namespace set-up: npm run provision');
  }
  return source.path;
}
