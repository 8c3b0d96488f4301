/**
 * Scenario 4, scale: N open expectations due months ahead. The worker (`src/worker.ts`), the bridge
 * (`src/bridge.ts`) and the dev server run as separate processes, each on a fresh server, so that resident memory
 * (VmRSS), database size (SQLite + WAL) and CPU over 30 s of idle can be read per process. Against the raw
 * baseline: N workflows each sleeping on one timer months ahead, with their own worker process.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import { startExpectation } from '../../src/temporal/expectations.js';
import { bundleWorkflows } from '../../src/temporal/workflow-bundle.js';
import { expectationLinks } from '../../src/temporal/ids.js';
import { startTestAgent } from '../../test/support/agent.js';
import { spawnEntry, type Child } from '../lib/child.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs, memoryMiB, sqliteMiB } from '../lib/proc.js';
import { delay, progress } from '../lib/progress.js';
import { freePort, startServer, type BenchServer, type ServerKind } from '../lib/server.js';
import { waitLedgersStarted, watcherEnv, writeAgentPrincipals } from '../lib/watcher-processes.js';
import { ratio } from '../lib/stats.js';

export interface ProcessCost {
  /** Resident memory after raising and 30 s of idle, MiB. */
  rssMiB: number;
  /** Peak resident memory (VmHWM) over the process's life, MiB. */
  peakMiB: number;
  /** Resident memory before anything was raised, MiB. */
  emptyRssMiB: number;
  /** CPU used over 30 s of idle, percent of one core. */
  idleCpuPct: number;
}

export interface ScaleSide {
  count: number;
  via: string;
  raisePerSec: number;
  /** From the first raise until every raise had settled, s. */
  settledSec: number;
  /** False when the worker never went idle (its figures were read anyway). */
  wentIdle: boolean;
  worker: ProcessCost;
  /** The worker's and the bridge's RSS as the count grew: sampled once past each quarter of the raises. */
  growth?: Array<{ raised: number; workerMiB: number; bridgeMiB: number }>;
  /** How the worker got its workflows: a bundle built beforehand (as the image does), or bundled at its start. */
  workerBundle?: 'prebuilt' | 'bundled at start';
  bridge?: ProcessCost;
  server?: ProcessCost;
  databaseMiB?: { db: number; wal: number; total: number };
}

export interface ScaleResult {
  count: number;
  ours?: ScaleSide;
  raw?: ScaleSide;
  ratios: { workerRss: number; serverRss?: number; database?: number };
}

const IDLE_WINDOW_MS = 30_000;

/** docker-compose.yml's worker runs with this (docs/operations.md, "A worker's memory"). */
export const DEPLOYED_WORKER_NODE_OPTIONS = '--max-old-space-size=384';

/**
 * Waits until the process has used under `thresholdMs` of CPU in each of two consecutive 2 s windows. After
 * `timeoutMs` it goes on with a warning (a worker that never idles is a finding, not a reason to lose the run).
 */
async function waitIdle(pid: number, what: string, thresholdMs = 60, timeoutMs = 1_800_000): Promise<boolean> {
  let calm = 0;
  const started = Date.now();
  const deadline = started + timeoutMs;
  let lastTick = started;
  while (calm < 2) {
    if (Date.now() > deadline) {
      progress(`  WARNING: ${what} did not go idle within ${timeoutMs / 1000} s; measuring anyway`);
      return false;
    }
    const before = cpuMs(pid);
    await delay(2_000);
    const used = cpuMs(pid) - before;
    calm = used < thresholdMs ? calm + 1 : 0;
    // A worker works through the workflow tasks the raises left queued for minutes: say so, not silence.
    if (Date.now() - lastTick >= 30_000) {
      progress(`  waiting for ${what} to go idle (${Math.round((Date.now() - started) / 1000)} s): ${Math.round(used)} ms CPU in the last 2 s`);
      lastTick = Date.now();
    }
  }
  return true;
}

/** RSS now, peak, and CPU over the idle window, for every process at once. */
async function measure(pids: Record<string, number>, empty: Record<string, number>): Promise<Record<string, ProcessCost>> {
  const cpu0 = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
  await delay(IDLE_WINDOW_MS);
  const costs: Record<string, ProcessCost> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const memory = memoryMiB(pid);
    costs[name] = {
      rssMiB: memory.rss,
      peakMiB: memory.peak,
      emptyRssMiB: empty[name]!,
      idleCpuPct: Number((((cpuMs(pid) - cpu0[name]!) / IDLE_WINDOW_MS) * 100).toFixed(2)),
    };
  }
  return costs;
}

function rssOf(pids: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, memoryMiB(pid).rss]));
}

function rateReporter(label: string, total: number) {
  const t0 = performance.now();
  return (done: number) =>
    progress(`  ${label}: ${done}/${total} (${((done * 1000) / (performance.now() - t0)).toFixed(0)}/s)`);
}

async function connect(server: BenchServer): Promise<Client> {
  const connection = await Connection.connect({ address: server.address, ...server.connectionOptions });
  return new Client({ connection, namespace: server.namespace });
}

async function oursSide(
  config: Config,
  dir: string,
  count: number,
  via: 'bridge' | 'direct',
  concurrency: number,
  workerEnv: Record<string, string>,
  kind: ServerKind,
): Promise<ScaleSide> {
  const server = await startServer(config, serverDir(dir, 'ours', kind), 'scale (ours)', kind);
  const queue = `${runPrefix}-scale`;
  const env = watcherEnv(server, queue, path.join(dir, 'ours'));
  const children: Child[] = [];
  const agent = await startTestAgent();
  const client = await connect(server);
  try {
    // The worker finds the agent's card in the bridge's principals file when it delivers a lapse.
    const principalsFile = path.join(dir, 'ours', 'principals.json');
    const token = writeAgentPrincipals(principalsFile, agent.cardUrl);
    // As deployed: the image builds the bundle once (`npm run bundle`) and the worker loads it, which keeps webpack
    // and its 150 MiB out of the worker. `--worker-env=WATCHER_WORKFLOW_BUNDLE=` (empty) bundles at start instead.
    const bundleFile = path.join(dir, 'ours', 'workflow-bundle.js');
    writeFileSync(bundleFile, await bundleWorkflows());
    // The heap bound of docker-compose.yml's worker too; `--worker-env=NODE_OPTIONS=` (empty) runs it unbounded.
    const workerVars: Record<string, string> = {
      WATCHER_WORKFLOW_BUNDLE: bundleFile,
      NODE_OPTIONS: DEPLOYED_WORKER_NODE_OPTIONS,
      ...workerEnv,
      WATCHER_PRINCIPALS_FILE: principalsFile,
    };
    for (const name of ['WATCHER_WORKFLOW_BUNDLE', 'NODE_OPTIONS']) if (workerVars[name] === '') delete workerVars[name];
    // Node flags NODE_OPTIONS refuses (e.g. `--cpu-prof --cpu-prof-dir=…` to profile the worker), space-separated.
    const nodeArgs = (workerVars.WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
    delete workerVars.WORKER_NODE_ARGS;
    const workerBundle = workerVars.WATCHER_WORKFLOW_BUNDLE ? 'prebuilt' : 'bundled at start';
    progress(`scale (ours): starting the worker process (src/worker.ts, workflows ${workerBundle})`);
    const worker = spawnEntry('src/worker.ts', [], { ...env, ...workerVars }, path.join(dir, 'ours', 'worker.log'), nodeArgs);
    children.push(worker);
    await worker.waitFor(/worker running/);
    const port = await freePort();
    const bridge = spawnEntry('src/bridge.ts', [], { ...env, PORT: String(port), WATCHER_PRINCIPALS_FILE: principalsFile }, path.join(dir, 'ours', 'bridge.log'));
    children.push(bridge);
    await bridge.waitFor(/bridge listening/);
    const pids: Record<string, number> = { worker: worker.pid, bridge: bridge.pid };
    if (server.embedded) pids.server = server.embedded.pid;
    const empty = rssOf(pids);

    const batches = Math.ceil(count / 10);
    const dueAt = monthsAhead();
    progress(`scale (ours): raising ${batches * 10} expectations ${via === 'bridge' ? 'through the bridge in batches of 10' : 'with startExpectation'}`);
    const t0 = performance.now();
    const tasks = via === 'bridge' ? batches : batches * 10;
    const reportRate = rateReporter('scale (ours) raised', tasks);
    const growth: NonNullable<ScaleSide['growth']> = [];
    const report = (done: number) => {
      reportRate(done);
      if (done * 4 < tasks * (growth.length + 1)) return;
      const sample = { raised: done * (via === 'bridge' ? 10 : 1), workerMiB: memoryMiB(worker.pid).rss, bridgeMiB: memoryMiB(bridge.pid).rss };
      growth.push(sample);
      // Printed as taken, so that a run stopped before its end keeps them in its log.
      progress(`scale (ours): ${sample.raised} raised, worker ${sample.workerMiB} MiB RSS, bridge ${sample.bridgeMiB} MiB`);
    };
    const pool =
      via === 'bridge'
        ? await runPool(
            batches,
            concurrency,
            (b) => postJson(`http://127.0.0.1:${port}/a2a/events`, token, artifactUpdate(batchOf(`${runPrefix}-scale`, b, 10, dueAt), `${runPrefix}-scale-task-${b}`)),
            { onProgress: report },
          )
        : await runPool(
            batches * 10,
            concurrency,
            (i) => {
              const expectation = batchOf(`${runPrefix}-scale`, Math.floor(i / 10), 10, dueAt)[i % 10]!;
              return startExpectation(client, queue, {
                expectation,
                // The principal id only, as the bridge raises it: the card is in the principals file.
                agent: { id: 'bench-agent' },
                origin: { taskId: `${runPrefix}-scale-task-${Math.floor(i / 10)}`, contextId: `ctx-${Math.floor(i / 10)}` },
                lineage: 0,
                links: expectationLinks(expectation),
                settings: { lateWindow: 'P30D', factRetention: 'P7D' },
              });
            },
            { onProgress: report },
          );
    if (pool.errors.length > 0) throw new Error(`scale (ours): raising failed: ${pool.errors[0]}`);
    const raisedMs = performance.now() - t0;
    // At 100,000 the worker works through its backlog for hours on 2 cores: the wait grows with the count.
    await waitLedgersStarted(client, queue, { facts: batches * 10, subjects: batches }, { label: 'scale (ours)', timeoutMs: Math.max(3_600_000, count * 250) });
    const wentIdle = await waitIdle(worker.pid, 'the worker');
    const settledSec = Number(((performance.now() - t0) / 1000).toFixed(1));
    progress(`scale (ours): settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`);
    const costs = await measure(pids, empty);
    return {
      count: batches * 10,
      via: via === 'bridge' ? 'bridge, batches of 10' : 'startExpectation',
      raisePerSec: Number(((batches * 10 * 1000) / raisedMs).toFixed(1)),
      settledSec,
      wentIdle,
      worker: costs.worker!,
      growth,
      workerBundle,
      bridge: costs.bridge,
      server: costs.server,
      databaseMiB: server.embedded ? sqliteMiB(server.embedded.dbFile) : undefined,
    };
  } finally {
    for (const child of children.reverse()) await child.stop();
    await client.connection.close();
    await agent.close();
    await server.stop();
  }
}

async function rawSide(config: Config, dir: string, count: number, bundle: string, concurrency: number, kind: ServerKind): Promise<ScaleSide> {
  const server = await startServer(config, serverDir(dir, 'raw', kind), 'scale (raw)', kind);
  const queue = `${runPrefix}-scale-raw`;
  const client = await connect(server);
  let worker: Child | undefined;
  try {
    worker = spawnEntry('bench/baseline/worker.ts', [server.address, server.namespace, queue, bundle], {}, path.join(dir, 'raw', 'worker.log'));
    await worker.waitFor(/baseline worker running/);
    const pids: Record<string, number> = { worker: worker.pid };
    if (server.embedded) pids.server = server.embedded.pid;
    const empty = rssOf(pids);
    const dueMs = Date.parse(monthsAhead());
    progress(`scale (raw): starting ${count} workflows sleeping until ${new Date(dueMs).toISOString()}`);
    const t0 = performance.now();
    const pool = await runPool(
      count,
      concurrency,
      (i) => client.workflow.start('sleepWorkflow', { workflowId: `${runPrefix}-scale-raw-${i}`, taskQueue: queue, args: [dueMs] }),
      { onProgress: rateReporter('scale (raw) started', count) },
    );
    if (pool.errors.length > 0) throw new Error(`scale (raw): starts failed: ${pool.errors[0]}`);
    const raisedMs = performance.now() - t0;
    const wentIdle = await waitIdle(worker.pid, 'the baseline worker');
    const settledSec = Number(((performance.now() - t0) / 1000).toFixed(1));
    progress(`scale (raw): settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`);
    const costs = await measure(pids, empty);
    return {
      count,
      via: 'client.workflow.start',
      raisePerSec: Number(((count * 1000) / raisedMs).toFixed(1)),
      settledSec,
      wentIdle,
      worker: costs.worker!,
      server: costs.server,
      databaseMiB: server.embedded ? sqliteMiB(server.embedded.dbFile) : undefined,
    };
  } finally {
    await worker?.stop();
    await client.connection.close();
    await server.stop();
  }
}

/** A fresh server per side: the dev server's SQLite file beside the side's logs, a cluster in a directory of its own. */
function serverDir(dir: string, side: 'ours' | 'raw', kind: ServerKind): string {
  return kind === 'cluster' ? path.join(dir, side, 'cluster') : path.join(dir, side);
}

export async function runScale(
  config: Config,
  dir: string,
  options: {
    count: number;
    via: 'bridge' | 'direct';
    concurrency: number;
    baselineBundle: string;
    sides: Set<'ours' | 'raw'>;
    workerEnv: Record<string, string>;
    /** `cluster`: a fresh Temporal cluster on PostgreSQL per side, as the dev server is fresh per side. */
    server?: ServerKind;
  },
): Promise<ScaleResult> {
  const kind = options.server ?? 'dev';
  mkdirSync(dir, { recursive: true });
  const count = Math.ceil(options.count / 10) * 10;
  const ours = options.sides.has('ours')
    ? await oursSide(config, dir, count, options.via, options.concurrency, options.workerEnv, kind)
    : undefined;
  const raw = options.sides.has('raw') ? await rawSide(config, dir, count, options.baselineBundle, options.concurrency, kind) : undefined;
  const both = <T>(pick: (side: ScaleSide) => T | undefined, f: (a: T, b: T) => number) => {
    const a = ours && pick(ours);
    const b = raw && pick(raw);
    return a !== undefined && b !== undefined ? f(a, b) : undefined;
  };
  return {
    count,
    ours,
    raw,
    ratios: {
      workerRss: both((s) => s.worker.rssMiB, ratio) ?? Number.NaN,
      serverRss: both((s) => s.server?.rssMiB, ratio),
      database: both((s) => s.databaseMiB?.total, ratio),
    },
  };
}
