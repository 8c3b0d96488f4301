/**
 * The Temporal server a benchmark phase runs on: the embedded dev server with a SQLite file in a temp dir and free
 * ports (what `npm start` runs), a Temporal cluster of our own (`--server cluster`: dev/cluster/temporal-cluster.ts)
 * in a temp dir on free ports, or the cluster at TEMPORAL_ADDRESS.
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { withLineSourceMap } from '../../src/temporal/workflow-bundle.js';
import type { Config } from '../../src/config.js';
import { connectionOptions } from '../../src/temporal/connection.js';
import { startTemporalCluster, type TemporalCluster } from '../../dev/cluster/temporal-cluster.js';
import { startDevServer } from '../../dev/temporal/dev-server.js';
import { TEMPORAL_SERVER_VERSION } from '../../dev/temporal/provision-cluster.js';
import { ensureDevServer } from '../../dev/temporal/provision.js';
import { freePort } from '../../test/support/net.js';
import { cpuMs, directoryMiB, sqliteMiB, treeCpuMs } from './proc.js';
import { onInterrupt } from './cleanup.js';
import { progress } from './progress.js';

/** `dev`: the embedded dev server (default); `cluster`: a Temporal cluster on PostgreSQL started by the bench. */
export type ServerKind = 'dev' | 'cluster';

/** The server as the report's "Run:" line names it. */
export function describeServer(kind: ServerKind, externalAddress?: string): string {
  if (externalAddress) return `external cluster ${externalAddress}`;
  return kind === 'cluster'
    ? `Temporal cluster, server ${TEMPORAL_SERVER_VERSION.slice(1)} on PostgreSQL, four service processes (frontend, history, matching, worker), started by the bench`
    : 'embedded dev server, SQLite file';
}

export interface BenchServer {
  address: string;
  namespace: string;
  connectionOptions: ReturnType<typeof connectionOptions>;
  /** The embedded server's process and SQLite file; absent for a cluster. */
  embedded?: { pid: number; dbFile: string };
  /** CPU used so far (ms) by the dev server, or the cluster's four services; absent for an external cluster. */
  serverCpuMs?: () => number;
  /** CPU used so far (ms) by the cluster's PostgreSQL, postmaster and backends; absent on the dev server. */
  databaseCpuMs?: () => number;
  /** The size of what the server stores on disk now (SQLite with its WAL, or PostgreSQL's data directory), MiB. */
  databaseMiB?: () => number;
  stop(): Promise<void>;
}

/** A client of `server` on a connection of its own (`client.connection.close()` closes it). */
export async function connect(server: BenchServer): Promise<Client> {
  const connection = await Connection.connect({ address: server.address, ...server.connectionOptions });
  return new Client({ connection, namespace: server.namespace });
}

/** The temporal CLI the embedded server runs (undefined when the SDK would download one). */
export function temporalCliPath(): string | undefined {
  const source = ensureDevServer({ log: (line) => progress(line) });
  return source.type === 'existing-path' ? source.path : undefined;
}

/** Starts a fresh embedded dev server or cluster under `dir`, or connects to the configured cluster. */
export async function startServer(
  config: Config,
  dir: string,
  label: string,
  kind: ServerKind = 'dev',
): Promise<BenchServer> {
  const options = connectionOptions(config.temporal);
  if (config.temporal.address) {
    progress(`${label}: using the Temporal cluster at ${config.temporal.address}`);
    const { address, namespace } = config.temporal;
    return { address, namespace, connectionOptions: options, stop: async () => {} };
  }
  mkdirSync(dir, { recursive: true });
  if (kind === 'cluster') return startCluster(dir, label, options);
  const dbFile = path.join(dir, 'temporal.sqlite');
  const devServer = await startDevServer({
    dbFilename: dbFile,
    port: await freePort(),
    uiPort: await freePort(),
    logFile: path.join(dir, 'temporal.log'),
    log: (line) => progress(line),
  });
  const pid = devServer.pid;
  if (pid === undefined) {
    await devServer.stop();
    throw new Error(
      'the embedded dev server runs inside the SDK (no temporal CLI): its memory cannot be measured apart',
    );
  }
  progress(`${label}: embedded dev server on ${devServer.address} (pid ${pid}, SQLite ${dbFile})`);
  const unregister = onInterrupt(() => devServer.stop());
  return {
    address: devServer.address,
    namespace: devServer.namespace,
    connectionOptions: options,
    embedded: { pid, dbFile },
    databaseMiB: () => sqliteMiB(dbFile),
    serverCpuMs: () => cpuMs(pid),
    stop: async () => {
      await devServer.stop();
      unregister();
    },
  };
}

/** A fresh cluster under `dir` (PostgreSQL data, logs, configuration), every port a free one. */
async function startCluster(dir: string, label: string, options: BenchServer['connectionOptions']) {
  const t0 = Date.now();
  let started: TemporalCluster | undefined;
  // Stopped on Ctrl-C even while it is still starting (startTemporalCluster stops what it started when it fails).
  const unregister = onInterrupt(async () => started?.stop());
  try {
    started = await startTemporalCluster({ dir, log: (line) => progress(`  cluster: ${line}`) });
  } catch (error) {
    unregister();
    throw error;
  }
  const cluster = started;
  const pids = Object.values(cluster.services).flatMap((service) => (service.pid === undefined ? [] : [service.pid]));
  const postmaster = Number(readFileSync(path.join(cluster.postgres.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  progress(
    `${label}: Temporal cluster on ${cluster.address} in ${((Date.now() - t0) / 1000).toFixed(1)} s (services ${pids.join(', ')}, PostgreSQL 127.0.0.1:${cluster.postgres.port}, UI ${cluster.uiUrl}, logs ${cluster.logDir})`,
  );
  return {
    address: cluster.address,
    namespace: cluster.namespace,
    connectionOptions: options,
    serverCpuMs: () => pids.reduce((sum, pid) => sum + cpuMs(pid), 0),
    databaseCpuMs: () => treeCpuMs(postmaster),
    databaseMiB: () => directoryMiB(cluster.postgres.dataDir),
    stop: async () => {
      await cluster.stop();
      unregister();
    },
  };
}

/** Bundles a workflows module into `file` (each worker gets a prebuilt bundle, as in the tests). */
export async function bundleTo(workflowsPath: string, file: string): Promise<string> {
  const quiet = { log() {}, info() {}, warn() {}, error: console.error, debug() {}, trace() {} };
  // As `npm run bundle` writes them for production: each line mapped to itself, which spares the SDK's per-promise
  // stack trace webpack's full map (src/temporal/workflow-bundle.ts). Both sides alike.
  writeFileSync(file, withLineSourceMap((await bundleWorkflowCode({ workflowsPath, logger: quiet })).code));
  return file;
}
