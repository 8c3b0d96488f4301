/**
 * Connection options for a cluster from the configuration (TLS, API key, gRPC metadata), what the log says about
 * them, and a reachability probe.
 */
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ClientPlugin,
  type TLSConfig,
} from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { TemporalConnectionConfig } from './connection-settings.js';

/** TLS, API-key and gRPC-metadata options in the form both `Connection` and `NativeConnection` take. */
export interface ConnectionExtras {
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
}

/** The options of `config` besides the address, for both `Connection` and `NativeConnection`. */
export function connectionOptions(config: TemporalConnectionConfig): ConnectionExtras {
  return {
    ...(config.tls !== undefined ? { tls: config.tls } : {}),
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
    ...(config.metadata ? { metadata: config.metadata } : {}),
  };
}

/**
 * Log fields saying where the connection settings came from (profile and file, or the environment) and what they
 * are. Never a secret: the API key and TLS key are reduced to whether they are set, gRPC metadata to header names.
 */
export function connectionSummary(config: TemporalConnectionConfig): Record<string, unknown> {
  const { profile, variables } = config.source;
  const mutual = typeof config.tls === 'object' && config.tls.clientCertPair !== undefined;
  const tls = config.tls === undefined || config.tls === false ? 'off' : mutual ? 'mTLS' : 'on';
  return {
    address: config.address,
    namespace: config.namespace,
    settingsFrom: profile ? `profile "${profile.name}" of ${profile.file}` : 'environment',
    ...(profile ? { profile: profile.name, configFile: profile.file } : {}),
    ...(variables.length > 0 ? { overriddenBy: variables } : {}),
    tls,
    apiKey: config.apiKey ? 'set' : 'none',
    ...(config.metadata ? { grpcMetadata: Object.keys(config.metadata) } : {}),
  };
}

/** gRPC attempts of a bridge call (0.6 s of backoff, not the SDK's 28 s), so an unreachable Temporal is a quick 503. */
const BRIDGE_GRPC_ATTEMPTS = 4;

/**
 * A client for the bridge. The connection is lazy so that the bridge starts (and answers 503) while Temporal is down.
 * `plugins`: e.g. the OpenTelemetry plugin when tracing is on; `dataConverter`: e.g. the encryption codec.
 */
export async function connectClient(
  address: string,
  config: TemporalConnectionConfig,
  options: { plugins?: ClientPlugin[]; dataConverter?: DataConverter } = {},
): Promise<Client> {
  const connection = Connection.lazy({
    address,
    ...connectionOptions(config),
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: BRIDGE_GRPC_ATTEMPTS }))],
  });
  return new Client({
    connection,
    namespace: config.namespace,
    ...(options.plugins ? { plugins: options.plugins } : {}),
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
  });
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
