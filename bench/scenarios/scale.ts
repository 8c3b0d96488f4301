/**
 * Scenario 4, scale: N open expectations due months ahead, raised through the bridge in batches of 10. The worker
 * (`src/worker.ts`, as compose runs it), the bridge (`src/bridge.ts`) and the dev server run as separate processes on
 * a fresh server, so that resident memory (VmRSS), database size (SQLite + WAL) and CPU over 30 s of idle can be read
 * per process. Against the raw baseline: N workflows each sleeping on one timer months ahead, with their own worker
 * process (the same heap bound, so the same cache rule), on another fresh server.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import { bundleWorkflows } from '../../src/temporal/workflow-bundle.js';
import { startTestAgent } from '../../test/support/agent.js';
import { writePrincipalsFile } from '../../test/support/agents.js';
import type { Child } from '../lib/child.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs, memoryMiB, sqliteMiB } from '../lib/proc.js';
import { delay, progress } from '../lib/progress.js';
import { startServer, type BenchServer, type ServerKind } from '../lib/server.js';
import { ratio } from '../lib/stats.js';
import {
  DEPLOYED_WORKER_NODE_OPTIONS,
  routersOf,
  spawnBaselineWorker,
  startWatcherProcesses,
  waitRoutersStarted,
} from '../lib/watcher-processes.js';

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
  bridge?: ProcessCost;
  server?: ProcessCost;
  databaseMiB?: { db: number; wal: number; total: number };
}

export interface ScaleResult {
  count: number;
  ours?: ScaleSide;
  raw?: ScaleSide;
  ratios: { workerRss?: number; serverRss?: number; database?: number };
}

const IDLE_WINDOW_MS = 30_000;

/**
 * How long a worker may take to go idle once the raising is done: at least 30 min, and 100 ms a raise (the dev server
 * left 184,000 workflow tasks queued after 100,000 raises, which a worker runs at about 30 a second).
 */
const idleTimeoutMs = (count: number) => Math.max(1_800_000, count * 100);

/**
 * Waits until the process has used under 60 ms of CPU in each of two consecutive 2 s windows. After `timeoutMs` it
 * goes on with a warning (a worker that never idles is a finding, not a reason to lose the run).
 */
async function waitIdle(pid: number, what: string, timeoutMs: number): Promise<boolean> {
  let calm = 0;
  const started = Date.now();
  let lastTick = started;
  while (calm < 2) {
    if (Date.now() > started + timeoutMs) {
      progress(`  WARNING: ${what} did not go idle within ${timeoutMs / 1000} s; measuring anyway`);
      return false;
    }
    const before = cpuMs(pid);
    await delay(2_000);
    const used = cpuMs(pid) - before;
    calm = used < 60 ? calm + 1 : 0;
    // A worker works through the workflow tasks the raises left queued for minutes: say so, not silence.
    if (Date.now() - lastTick >= 30_000) {
      progress(
        `  waiting for ${what} to go idle (${Math.round((Date.now() - started) / 1000)} s): ${used} ms CPU in 2 s`,
      );
      lastTick = Date.now();
    }
  }
  return true;
}

/** RSS now, peak, and CPU over the idle window, for every process at once. */
async function measure(
  pids: Record<string, number>,
  empty: Record<string, number>,
): Promise<Record<string, ProcessCost>> {
  const cpu0 = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
  await delay(IDLE_WINDOW_MS);
  const costs: Record<string, ProcessCost> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const memory = memoryMiB(pid);
    const idleCpuPct = Number((((cpuMs(pid) - cpu0[name]!) / IDLE_WINDOW_MS) * 100).toFixed(2));
    costs[name] = { rssMiB: memory.rss, peakMiB: memory.peak, emptyRssMiB: empty[name]!, idleCpuPct };
  }
  return costs;
}

const rssOf = (pids: Record<string, number>) =>
  Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, memoryMiB(pid).rss]));

/** Progress in expectations (a unit is `unitSize` of them: a batch of 10 through the bridge), and their rate. */
function rateReporter(label: string, total: number, unitSize = 1) {
  const t0 = performance.now();
  return (done: number) => {
    const rate = (done * unitSize * 1000) / (performance.now() - t0);
    progress(`  ${label}: ${done * unitSize}/${total * unitSize} (${rate.toFixed(1)}/s)`);
  };
}

async function connect(server: BenchServer): Promise<Client> {
  const connection = await Connection.connect({ address: server.address, ...server.connectionOptions });
  return new Client({ connection, namespace: server.namespace });
}

async function oursSide(config: Config, dir: string, batches: number, concurrency: number, kind: ServerKind) {
  mkdirSync(dir, { recursive: true });
  const server = await startServer(config, serverDir(dir, kind), 'scale (ours)', kind);
  const prefix = `${runPrefix}-scale`;
  const children: Child[] = [];
  const agent = await startTestAgent();
  const client = await connect(server);
  try {
    // The worker finds the agent's card in the bridge's principals file when it delivers a lapse.
    const token = `agent-${runPrefix}`;
    const principalsFile = writePrincipalsFile([{ id: 'bench-agent', roles: ['agent'], cardUrl: agent.cardUrl }], {
      tokens: { 'bench-agent': token },
      file: path.join(dir, 'principals.json'),
    });
    // As deployed: the image builds the bundle once (`npm run bundle`) and the worker loads it, which keeps webpack
    // and its 150 MiB out of the worker.
    const bundleFile = path.join(dir, 'workflow-bundle.js');
    writeFileSync(bundleFile, await bundleWorkflows());
    progress('scale (ours): starting the worker process (src/worker.ts, prebuilt workflow bundle) and the bridge');
    const { worker, bridge, bridgeUrl } = await startWatcherProcesses(
      server,
      { queue: prefix, dir, bundle: bundleFile, principalsFile },
      children,
    );
    const pids: Record<string, number> = { worker: worker.pid, bridge: bridge.pid };
    if (server.embedded) pids.server = server.embedded.pid;
    const emptyRssMiB = rssOf(pids);

    const dueAt = monthsAhead();
    progress(`scale (ours): raising ${batches * 10} expectations through the bridge in batches of 10`);
    const reportRate = rateReporter('scale (ours) raised', batches, 10);
    const growth: NonNullable<ScaleSide['growth']> = [];
    const report = (done: number) => {
      reportRate(done);
      if (done * 4 < batches * (growth.length + 1)) return;
      const sample = { raised: done * 10, workerMiB: memoryMiB(worker.pid).rss, bridgeMiB: memoryMiB(bridge.pid).rss };
      growth.push(sample);
      // Printed as taken, so that a run stopped before its end keeps them in its log.
      progress(
        `scale (ours): ${sample.raised} raised, worker ${sample.workerMiB} MiB RSS, bridge ${sample.bridgeMiB} MiB`,
      );
    };
    const t0 = performance.now();
    const raised = await runPool(
      batches,
      concurrency,
      (b) =>
        postJson(
          `${bridgeUrl}/a2a/events`,
          token,
          artifactUpdate(batchOf(prefix, b, 10, dueAt), `${prefix}-task-${b}`),
        ),
      { onProgress: report },
    );
    const raiseMs = performance.now() - t0;
    if (raised.errors.length > 0) throw new Error(`raising failed: ${raised.errors[0]}`);
    // At 100,000 the worker works through its backlog for hours on 2 cores: the waits grow with the count.
    await waitRoutersStarted(client, prefix, routersOf(batchKeys(prefix, batches, 10), prefix).size, {
      label: 'scale (ours)',
      timeoutMs: Math.max(3_600_000, batches * 2_500),
    });
    const wentIdle = await waitIdle(worker.pid, 'the worker', idleTimeoutMs(batches * 10));
    const settledSec = Number(((performance.now() - t0) / 1000).toFixed(1));
    progress(
      `scale (ours): settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`,
    );
    const costs = await measure(pids, emptyRssMiB);
    return {
      count: batches * 10,
      via: 'bridge, batches of 10',
      raisePerSec: Number(((batches * 10 * 1000) / raiseMs).toFixed(1)),
      settledSec,
      wentIdle,
      worker: costs.worker!,
      growth,
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

async function rawSide(
  config: Config,
  dir: string,
  count: number,
  bundle: string,
  concurrency: number,
  kind: ServerKind,
): Promise<ScaleSide> {
  mkdirSync(dir, { recursive: true });
  const server = await startServer(config, serverDir(dir, kind), 'scale (raw)', kind);
  const queue = `${runPrefix}-scale-raw`;
  const client = await connect(server);
  let worker: Child | undefined;
  try {
    worker = spawnBaselineWorker({
      server,
      queue,
      bundle,
      dir,
      nodeOptions: DEPLOYED_WORKER_NODE_OPTIONS,
    });
    await worker.waitFor(/baseline worker running/);
    const workerPid = worker.pid;
    const pids: Record<string, number> = { worker: workerPid };
    if (server.embedded) pids.server = server.embedded.pid;
    const emptyRssMiB = rssOf(pids);
    const dueMs = Date.parse(monthsAhead());
    progress(`scale (raw): starting ${count} workflows sleeping six months`);
    const t0 = performance.now();
    const started = await runPool(
      count,
      concurrency,
      (i) => client.workflow.start('sleepWorkflow', { workflowId: `${queue}-${i}`, taskQueue: queue, args: [dueMs] }),
      { onProgress: rateReporter('scale (raw) started', count) },
    );
    const raiseMs = performance.now() - t0;
    if (started.errors.length > 0) throw new Error(`raw starts failed: ${started.errors[0]}`);
    const wentIdle = await waitIdle(workerPid, 'the baseline worker', idleTimeoutMs(count));
    const settledSec = Number(((performance.now() - t0) / 1000).toFixed(1));
    progress(`scale (raw): settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`);
    const costs = await measure(pids, emptyRssMiB);
    return {
      count,
      via: 'client.workflow.start',
      raisePerSec: Number(((count * 1000) / raiseMs).toFixed(1)),
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

/** The dev server's SQLite file beside the side's logs, a cluster in a directory of its own. */
const serverDir = (dir: string, kind: ServerKind) => (kind === 'cluster' ? path.join(dir, 'cluster') : dir);

export async function runScale(
  config: Config,
  dir: string,
  options: {
    count: number;
    concurrency: number;
    baselineBundle: string;
    /** `--scale-sides=ours`: one side only. */
    sides: Set<'ours' | 'raw'>;
    /** `cluster`: a fresh Temporal cluster on PostgreSQL per side, as the dev server is fresh per side. */
    server: ServerKind;
  },
): Promise<ScaleResult> {
  const batches = Math.ceil(options.count / 10);
  const count = batches * 10;
  const ours = options.sides.has('ours')
    ? await oursSide(config, path.join(dir, 'ours'), batches, options.concurrency, options.server)
    : undefined;
  const raw = options.sides.has('raw')
    ? await rawSide(config, path.join(dir, 'raw'), count, options.baselineBundle, options.concurrency, options.server)
    : undefined;
  const both = (pick: (side: ScaleSide) => number | undefined) => {
    const a = ours && pick(ours);
    const b = raw && pick(raw);
    return a !== undefined && b !== undefined ? ratio(a, b) : undefined;
  };
  return {
    count,
    ours,
    raw,
    ratios: {
      workerRss: both((s) => s.worker.rssMiB),
      serverRss: both((s) => s.server?.rssMiB),
      database: both((s) => s.databaseMiB?.total),
    },
  };
}
