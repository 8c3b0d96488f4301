/**
 * What the fault, authorization and bad-input tests share: polling, a dev server of a test's own on a SQLite file
 * (stopped and started again on the same database), the worker as a child process that can be killed with
 * SIGKILL, the bridge app listening on a random port with principals of every role, and readers of what the agent
 * received.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { createPrincipalStore, tokenSha256, type Role } from '../../src/auth/principals.js';
import { createApp, type AppDeps } from '../../src/http/app.js';
import { EXTENSION_URI, type Expectation } from '../../src/schemas/extension.js';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import type { TestAgent, ReceivedMessage } from './agent.js';
import { freePort } from './net.js';
import { spawnEntry, type Spawned } from './processes.js';

export { artifactUpdate, unique } from './payloads.js';

/** Polls `probe` until it returns something other than undefined/false; fails naming `what` and the last value. */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 200));
  }
}

/** A dev server of the test's own on a SQLite file in a temporary directory; `restart()` keeps the database and ports. */
export interface OwnDevServer {
  readonly address: string;
  readonly dbFilename: string;
  readonly running: boolean;
  stop(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  /** Stops it (if running) and removes its directory. */
  dispose(): Promise<void>;
}

/** Starts a dev server on its own ports and SQLite file. */
export async function startOwnDevServer(name: string): Promise<OwnDevServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `watcher-${name}-`));
  const dbFilename = path.join(dir, 'temporal.sqlite');
  const port = await freePort();
  let server: DevServer | undefined;
  const start = async () => {
    server = await startDevServer({ dbFilename, port, logFile: path.join(dir, 'temporal.log') });
  };
  await start();
  const stop = async (signal?: NodeJS.Signals) => {
    const current = server;
    server = undefined;
    await current?.stop(signal);
  };
  return {
    address: `127.0.0.1:${port}`,
    dbFilename,
    get running() {
      return server !== undefined;
    },
    stop,
    start,
    async dispose() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The pids of every live descendant of `pid` (read from /proc: tsx runs the script in a child of its own). */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // `pid (comm) state ppid ...`; comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended while we read.
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of parents.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** A worker child process; `kill9()` sends SIGKILL to the tsx launcher and to the node process that runs the worker. */
export interface WorkerProcess extends Spawned {
  kill9(): Promise<void>;
}

/** `src/worker.ts` as a child process on `address` and `taskQueue`; resolves once it logs that it runs. */
export async function spawnWorker(address: string, taskQueue: string): Promise<WorkerProcess> {
  const worker = spawnEntry('src/worker.ts', {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    WATCHER_LOG_LEVEL: 'info',
    WATCHER_DATA_DIR: os.tmpdir(),
    // Several workers run at once in the suite: none serves metrics on the fixed default port.
    WATCHER_WORKER_METRICS_PORT: '0',
  });
  // SIGKILL cannot be relayed by tsx to its child, so the whole tree is killed, leaves included.
  const kill9 = async () => {
    const pids = [worker.child.pid!, ...descendants(worker.child.pid!)];
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await worker.exited;
    await waitUntil('the killed worker processes to be gone', () => pids.every((pid) => !isAlive(pid)), { timeoutMs: 10_000, intervalMs: 50 });
  };
  const handle: WorkerProcess = { ...worker, kill9 };
  try {
    await worker.waitFor(/worker running/, 120_000);
  } catch (error) {
    await kill9();
    throw error;
  }
  return handle;
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The principals every matrix and fault test uses; `agent` principals need a card URL. */
export interface PrincipalSpec {
  id: string;
  roles: Role[];
  cardUrl?: string;
  authorization?: string;
}

export interface BridgeApp {
  url: string;
  /** principal id → bearer token */
  tokens: Record<string, string>;
  close(): Promise<void>;
}

/** `createApp` on `client`, listening on 127.0.0.1 and a random port, with one random token per principal. */
export async function startBridgeApp(
  client: Client,
  taskQueue: string,
  principals: PrincipalSpec[],
  overrides: Partial<Omit<AppDeps, 'client' | 'taskQueue' | 'principals'>> = {},
): Promise<BridgeApp> {
  const tokens = Object.fromEntries(principals.map((p) => [p.id, `${p.id}-${randomUUID()}`]));
  const store = createPrincipalStore({
    principals: principals.map((p) => ({
      id: p.id,
      tokenSha256: tokenSha256(tokens[p.id]!),
      roles: p.roles,
      ...(p.cardUrl ? { agent: { cardUrl: p.cardUrl, authorization: p.authorization } } : {}),
    })),
  });
  const app = createApp({
    client,
    taskQueue,
    namespace: 'default',
    principals: store,
    settings: { factRetention: 'P7D', lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 0 },
    ...overrides,
  });
  const server: Server = await new Promise((resolve, reject) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    listening.once('error', reject);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tokens,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  contentType: string;
  body: any;
  ms: number;
}

/** One request to the bridge: JSON body (or a raw one with its own content type), bearer token, timing. */
export async function send(
  url: string,
  init: {
    method?: string;
    token?: string;
    /** The whole Authorization header, for malformed ones. */
    authorization?: string;
    json?: unknown;
    raw?: string | Buffer;
    contentType?: string;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (init.authorization !== undefined) headers.authorization = init.authorization;
  let body: string | Buffer | undefined = init.raw;
  if (init.json !== undefined) body = JSON.stringify(init.json);
  if (body !== undefined) headers['content-type'] = init.contentType ?? 'application/json';
  const started = Date.now();
  const response = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (e.g. /metrics)
  }
  return {
    status: response.status,
    headers: response.headers,
    contentType: response.headers.get('content-type') ?? '',
    body: parsed,
    ms: Date.now() - started,
  };
}


/** A `delivery` expectation on `shipment` (the test agent's default kind), due at `dueAt` with no grace. */
export function dueExpectation(id: string, dueAt: Date, overrides: Partial<Expectation> = {}): Expectation {
  const due = new Date(dueAt);
  due.setUTCMilliseconds(0);
  return {
    expectationId: id,
    kind: 'delivery',
    subject: { type: 'shipment', id: `S-${id}` },
    expects: 'The shipment is delivered',
    satisfiedBy: { factKey: `shipment/${id}/delivered` },
    dueAt: due.toISOString(),
    grace: 'PT0S',
    basis: 'contract',
    ...overrides,
  };
}


/** The lapse object of a message the agent received (undefined for anything else). */
export const lapseOf = (received: ReceivedMessage): { expectationId: string; lapse: string; dueAt: string } | undefined =>
  received.message?.metadata?.[EXTENSION_URI]?.lapse;

/** Every lapse message the agent received for one expectation. */
export const lapsesFor = (agent: TestAgent, expectationId: string): ReceivedMessage[] =>
  agent.received.filter((received) => lapseOf(received)?.expectationId === expectationId);

/** How many workflow executions the visibility store counts for a query (eventually consistent). */
export async function countWorkflows(client: Client, query: string): Promise<number> {
  const { count } = await client.workflow.count(query);
  return count;
}
