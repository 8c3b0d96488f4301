/**
 * The embedded Temporal dev server (`temporal server start-dev`): SQLite file, web UI, our search attributes and a
 * namespace retention long enough that a closed expectation stays readable. One process, started and stopped here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import Long from 'long';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ensureDevServer, waitForPort, type ServerSource } from './provision.js';
import { allSearchAttributes } from '../../workflows/search-attributes.js';
import { devServerSearchAttributeFlags } from '../../src/temporal/search-attributes.js';

export interface DevServerOptions {
  /** SQLite file; unset keeps everything in memory. */
  dbFilename?: string;
  ip?: string;
  port: number;
  /** Web UI port; unset runs headless. */
  uiPort?: number;
  /** The codec server the web UI decodes payloads with (`--ui-codec-endpoint`), e.g. a bridge's `/codec`. */
  uiCodecEndpoint?: string;
  namespace?: string;
  /** Namespace retention in days (default 30). */
  retentionDays?: number;
  /** `KEY=VALUE` dynamic config values, e.g. `limit.historyCount.suggestContinueAsNew=200`. */
  dynamicConfig?: string[];
  /** File the server's own log goes to (default: discarded). */
  logFile?: string;
  source?: ServerSource;
  log?: (line: string) => void;
}

/** A running dev server. `stop()` ends it and waits until it has exited. */
export interface DevServer {
  readonly address: string;
  readonly uiUrl?: string;
  readonly namespace: string;
  readonly pid?: number;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts the dev server and resolves once its frontend answers and the namespace is configured. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const source = options.source ?? ensureDevServer({ log: options.log });
  const ip = options.ip ?? '127.0.0.1';
  const namespace = options.namespace ?? 'default';
  const address = `${ip}:${options.port}`;
  const uiUrl = options.uiPort ? `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${options.uiPort}` : undefined;
  if (options.dbFilename) mkdirSync(path.dirname(options.dbFilename), { recursive: true });

  let server: DevServer;
  if (source.type === 'sdk-download') {
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        ip,
        port: options.port,
        ui: Boolean(options.uiPort),
        uiPort: options.uiPort,
        dbFilename: options.dbFilename,
        namespace,
        searchAttributes: [...allSearchAttributes],
        extraArgs: [
          ...(options.dynamicConfig ?? []).flatMap((value) => ['--dynamic-config-value', value]),
          ...(options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : []),
        ],
      },
    });
    server = { address, uiUrl, namespace, stop: () => env.teardown() };
  } else {
    const args = ['server', 'start-dev', '--ip', ip, '--port', String(options.port), '--log-level', 'warn'];
    args.push(...(options.uiPort ? ['--ui-port', String(options.uiPort)] : ['--headless']));
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
    if (options.dbFilename) args.push('--db-filename', options.dbFilename);
    if (namespace !== 'default') args.push('--namespace', namespace);
    args.push(...devServerSearchAttributeFlags());
    for (const value of options.dynamicConfig ?? []) args.push('--dynamic-config-value', value);
    const output = options.logFile ? openSync(options.logFile, 'a') : 'ignore';
    const child = spawn(source.path, args, { stdio: ['ignore', output, output] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const listening = await Promise.race([waitForPort(options.port, 60_000, ip), exited.then(() => false)]);
    if (!listening) {
      child.kill('SIGKILL');
      throw new Error(
        `the Temporal dev server (${source.path}) did not listen on ${address}` +
          (options.logFile ? `; see ${options.logFile}` : '') +
          (child.exitCode !== null ? ` (exited with ${child.exitCode})` : ''),
      );
    }
    server = { address, uiUrl, namespace, pid: child.pid, stop: (signal) => stopChild(child, exited, signal) };
  }
  await configureNamespace(address, namespace, options.retentionDays ?? 30);
  return server;
}

async function stopChild(
  child: ChildProcess,
  exited: Promise<unknown>,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Waits for the frontend to answer and sets the namespace retention. */
async function configureNamespace(address: string, namespace: string, retentionDays: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 5_000 });
      try {
        await connection.workflowService.updateNamespace({
          namespace,
          config: { workflowExecutionRetentionTtl: { seconds: Long.fromNumber(retentionDays * 24 * 3600) } },
        });
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
