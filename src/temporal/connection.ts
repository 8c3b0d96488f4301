/**
 * Connection options for an existing cluster (TLS, API key) from the configuration, and a reachability probe.
 */
import { readFileSync } from 'node:fs';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
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

/** A client for the bridge. The connection is lazy so that the bridge starts (and answers 503) while Temporal is down. */
export async function connectClient(address: string, config: TemporalConnectionConfig): Promise<Client> {
  const connection = Connection.lazy({ address, ...connectionOptions(config) });
  return new Client({ connection, namespace: config.namespace });
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
