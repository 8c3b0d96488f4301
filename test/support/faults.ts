/**
 * What the fault tests share: a dev server of a test's own on a SQLite file (stopped and started again on the same
 * database), and the worker as a child process that can be killed with SIGKILL; polling is poll.ts's (re-exported
 * here for the fault tests). The bridge they test is in bridge.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer, type DevServer } from '../../dev/temporal/dev-server.js';
import { freePort } from './net.js';
import { waitUntil } from './poll.js';
import { LOOPBACK_AGENTS_ENV } from './outbound.js';
import { spawnEntry, type Spawned } from './processes.js';

export { waitUntil } from './poll.js';

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

/**
 * `src/worker.ts` as a child process on `address` and `taskQueue`, delivering lapses to the agents of
 * `principalsFile` (`writePrincipalsFile` in agents.ts); resolves once it logs that it runs. `env` adds settings
 * (e.g. WATCHER_WORKFLOW_BUNDLE, so that a restarted worker polls within seconds).
 */
export async function spawnWorker(
  address: string,
  taskQueue: string,
  principalsFile: string,
  env: Record<string, string> = {},
): Promise<WorkerProcess> {
  const worker = spawnEntry('src/worker.ts', {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    WATCHER_PRINCIPALS_FILE: principalsFile,
    WATCHER_LOG_LEVEL: 'info',
    WATCHER_DATA_DIR: os.tmpdir(),
    // Several workers run at once in the suite: none serves metrics on the fixed default port.
    WATCHER_WORKER_METRICS_PORT: '0',
    // The tests' agents listen on 127.0.0.1, which a worker on a cluster reaches only when this names it.
    ...LOOPBACK_AGENTS_ENV,
    ...env,
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
    await waitUntil('the killed worker processes to be gone', () => pids.every((pid) => !isAlive(pid)), {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
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
