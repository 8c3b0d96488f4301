/**
 * The Temporal server's configuration for a local cluster on PostgreSQL: both stores (default and SQL visibility)
 * on one PostgreSQL, the four services on 127.0.0.1 with their own gRPC and membership ports. Pure: the launcher
 * writes the text to a file and starts each service with `--config-file`.
 */

/** The services of a Temporal cluster, in the order they are started (and stopped in reverse). */
export const TEMPORAL_SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

export interface ServicePorts {
  grpc: number;
  membership: number;
}

export interface ServerConfigInput {
  postgres: { host: string; port: number; user: string; password: string };
  databases?: { default: string; visibility: string };
  services: Record<TemporalService, ServicePorts>;
  /** The frontend's HTTP API port. */
  frontendHttpPort: number;
  /** Fixed when the cluster is first created: a later change needs a new database. */
  numHistoryShards: number;
  /** Dynamic configuration file (the same one docker-compose.yml mounts). */
  dynamicConfigFile: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
}

type Yaml = string | number | boolean | Yaml[] | { [key: string]: Yaml };

/** The configuration as an object, in the shape of the server's `config/development-postgres12.yaml`. */
export function temporalServerConfig(input: ServerConfigInput): { [key: string]: Yaml } {
  const databases = input.databases ?? { default: 'temporal', visibility: 'temporal_visibility' };
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${input.postgres.host}:${input.postgres.port}`,
      connectProtocol: 'tcp',
      user: input.postgres.user,
      password: input.postgres.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (name: TemporalService) => ({
    rpc: {
      grpcPort: input.services[name].grpc,
      membershipPort: input.services[name].membership,
      bindOnLocalHost: true,
      ...(name === 'frontend' ? { httpPort: input.frontendHttpPort } : {}),
    },
  });
  const frontend = `127.0.0.1:${input.services.frontend.grpc}`;
  return {
    log: { stdout: true, level: input.logLevel ?? 'info' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: input.numHistoryShards,
      datastores: {
        'postgres-default': store(databases.default, 20),
        'postgres-visibility': store(databases.visibility, 10),
      },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: Object.fromEntries(TEMPORAL_SERVICES.map((name) => [name, service(name)])),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: frontend },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    // Where the worker service (system workflows) and internal clients reach the frontend.
    publicClient: { hostPort: frontend },
    dynamicConfigClient: { filepath: input.dynamicConfigFile, pollInterval: '10s' },
  };
}

/** YAML text of a tree of maps, lists and scalars; strings are double-quoted (JSON escapes are valid YAML). */
export function toYaml(value: Yaml, indent = ''): string {
  if (Array.isArray(value)) {
    return value.map((item) => `${indent}-${block(item, `${indent}  `, ' ')}`).join('');
  }
  if (typeof value === 'object') {
    return Object.entries(value)
      .map(([key, item]) => `${indent}${key}:${block(item, `${indent}  `, ' ')}`)
      .join('');
  }
  return `${indent}${scalar(value)}\n`;
}

function block(value: Yaml, indent: string, separator: string): string {
  if (typeof value === 'object') {
    const empty = Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0;
    return empty ? `${separator}${Array.isArray(value) ? '[]' : '{}'}\n` : `\n${toYaml(value, indent)}`;
  }
  return `${separator}${scalar(value)}\n`;
}

function scalar(value: string | number | boolean): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
