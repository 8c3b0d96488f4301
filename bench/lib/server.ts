/**
 * The Temporal server a benchmark phase runs on: the embedded dev server with a SQLite file in a temp dir and free
 * ports (what `npm start` runs), or the cluster at TEMPORAL_ADDRESS.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { Config } from '../../src/config.js';
import { connectionOptions } from '../../src/temporal/connection.js';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { ensureDevServer } from '../../src/temporal/provision.js';
import { freePort } from '../../test/support/net.js';
import { onInterrupt } from './cleanup.js';
import { progress } from './progress.js';

export { freePort };

export interface BenchServer {
  address: string;
  namespace: string;
  /** TLS / API key for an external cluster. */
  connectionOptions: ReturnType<typeof connectionOptions>;
  /** The embedded server's process and SQLite file; absent for an external cluster. */
  embedded?: { devServer: DevServer; pid: number; dbFile: string };
  stop(): Promise<void>;
}

/** The temporal CLI the embedded server runs (undefined when the SDK would download one). */
export function temporalCliPath(): string | undefined {
  const source = ensureDevServer({ log: (line) => progress(line) });
  return source.type === 'existing-path' ? source.path : undefined;
}

/** Starts a fresh embedded dev server under `dir`, or connects to the configured cluster. */
export async function startServer(config: Config, dir: string, label: string): Promise<BenchServer> {
  const options = connectionOptions(config.temporal);
  if (config.temporal.address) {
    progress(`${label}: using the Temporal cluster at ${config.temporal.address}`);
    return { address: config.temporal.address, namespace: config.temporal.namespace, connectionOptions: options, stop: async () => {} };
  }
  mkdirSync(dir, { recursive: true });
  const dbFile = path.join(dir, 'temporal.sqlite');
  const port = await freePort();
  const devServer = await startDevServer({
    dbFilename: dbFile,
    port,
    uiPort: await freePort(),
    logFile: path.join(dir, 'temporal.log'),
    log: (line) => progress(line),
  });
  if (devServer.pid === undefined) {
    await devServer.stop();
    throw new Error('the embedded dev server runs inside the SDK (no temporal CLI): its memory cannot be measured apart');
  }
  progress(`${label}: embedded dev server on ${devServer.address} (pid ${devServer.pid}, SQLite ${dbFile})`);
  const unregister = onInterrupt(() => devServer.stop());
  return {
    address: devServer.address,
    namespace: devServer.namespace,
    connectionOptions: options,
    embedded: { devServer, pid: devServer.pid, dbFile },
    stop: async () => {
      await devServer.stop();
      unregister();
    },
  };
}

const quietLogger = { log() {}, info() {}, warn() {}, error: console.error, debug() {}, trace() {} };

/** Bundles a workflows module into `file` (each worker gets a prebuilt bundle, as in the tests). */
export async function bundleTo(workflowsPath: string, file: string): Promise<string> {
  const bundle = await bundleWorkflowCode({ workflowsPath, logger: quietLogger });
  writeFileSync(file, bundle.code);
  return file;
}
