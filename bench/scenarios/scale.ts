/**
 * Scenario 4, scale (BENCHMARKS.md, "What is measured"): N open expectations, each side's processes apart on a fresh
 * server, so that resident memory (VmRSS), database size and CPU over 30 s of idle are read per process.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import { bundleWorkflows } from '../../src/temporal/workflow-bundle.js';
import { startTestAgent } from '../../test/support/agent.js';
import { writePrincipalsFile } from '../../test/support/agents.js';
import type { Stoppable } from '../lib/child.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs, memoryMiB, sqliteMiB } from '../lib/proc.js';
import { delay, progress } from '../lib/progress.js';
import { connect, startServer, type BenchServer, type ServerKind } from '../lib/server.js';
import { ratio } from '../lib/stats.js';
import { routersOf, startBaselineWorker, startWatcherProcesses, waitRoutersStarted } from '../lib/watcher-processes.js';

/** Resident memory after raising and 30 s of idle, its peak (VmHWM), before raising (MiB); CPU over the idle 30 s. */
export interface ProcessCost {
  rssMiB: number;
  peakMiB: number;
  emptyRssMiB: number;
  idleCpuPct: number;
}

export type ScaleSide = Awaited<ReturnType<typeof measureSide>>;
export type ScaleResult = Awaited<ReturnType<typeof runScale>>;

const IDLE_WINDOW_MS = 30_000;

/**
 * Waits until the process has used under 60 ms of CPU in each of two consecutive 2 s windows; after `timeoutMs` (at
 * least 30 min, and 100 ms a raise: a worker works through the tasks the raises left queued) it goes on with a warning.
 */
async function waitIdle(pid: number, what: string, count: number): Promise<boolean> {
  const timeoutMs = Math.max(1_800_000, count * 100);
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
    if (Date.now() - lastTick >= 30_000) {
      progress(
        `  waiting for ${what} to go idle (${Math.round((Date.now() - started) / 1000)} s): ${used} ms CPU in 2 s`,
      );
      lastTick = Date.now();
    }
  }
  return true;
}

/** A side's processes once started: how to raise its `count`, and to wait for what the raises left to do. */
interface Started {
  pids: { worker: number; bridge?: number };
  via: string;
  /** Raises, telling `raised` the count so far every few seconds. */
  raise(raised: (count: number) => void): Promise<{ errors: string[] }>;
  afterRaising?(): Promise<void>;
}

/**
 * One side on a fresh server under `dir`: `start` starts its processes (pushed to `children` for the stop); then its
 * raising rate, the time until every raise settled, the worker's and the bridge's RSS past each quarter of the raises,
 * and once its worker went idle (`wentIdle` false if it never did) what each process costs.
 */
async function measureSide(
  config: Config,
  dir: string,
  options: { label: string; kind: ServerKind; count: number },
  start: (server: BenchServer, client: Client, children: Stoppable[]) => Promise<Started>,
) {
  const { label, count } = options;
  mkdirSync(dir, { recursive: true });
  // The dev server's SQLite file beside the side's logs, a cluster in a directory of its own.
  const serverDir = options.kind === 'cluster' ? path.join(dir, 'cluster') : dir;
  const server = await startServer(config, serverDir, label, options.kind);
  const client = await connect(server);
  const children: Stoppable[] = [];
  try {
    const started = await start(server, client, children);
    const pids: Record<string, number> = { worker: started.pids.worker };
    if (started.pids.bridge !== undefined) pids.bridge = started.pids.bridge;
    if (server.embedded) pids.server = server.embedded.pid;
    const emptyRssMiB = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, memoryMiB(pid).rss]));
    const t0 = performance.now();
    const growth: Array<{ raised: number; workerMiB: number; bridgeMiB: number }> = [];
    const raised = await started.raise((done) => {
      progress(`  ${label} raised: ${done}/${count} (${((done * 1000) / (performance.now() - t0)).toFixed(1)}/s)`);
      // Once past each quarter of the raises, the worker's and the bridge's RSS, printed as taken for a run cut short.
      if (pids.bridge === undefined || done * 4 < count * (growth.length + 1)) return;
      const taken = { raised: done, workerMiB: memoryMiB(pids.worker!).rss, bridgeMiB: memoryMiB(pids.bridge).rss };
      growth.push(taken);
      progress(`${label}: ${done} raised, worker ${taken.workerMiB} MiB RSS, bridge ${taken.bridgeMiB} MiB`);
    });
    const raiseMs = performance.now() - t0;
    if (raised.errors.length > 0) throw new Error(`${label}: raising failed: ${raised.errors[0]}`);
    await started.afterRaising?.();
    const wentIdle = await waitIdle(pids.worker!, `${label}'s worker`, count);
    const settledSec = Number(((performance.now() - t0) / 1000).toFixed(1));
    progress(`${label}: settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`);
    const cpu0 = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
    await delay(IDLE_WINDOW_MS);
    const costs: Record<string, ProcessCost> = {};
    for (const [name, pid] of Object.entries(pids)) {
      const memory = memoryMiB(pid);
      const idleCpuPct = Number((((cpuMs(pid) - cpu0[name]!) / IDLE_WINDOW_MS) * 100).toFixed(2));
      costs[name] = { rssMiB: memory.rss, peakMiB: memory.peak, emptyRssMiB: emptyRssMiB[name]!, idleCpuPct };
    }
    return {
      count,
      via: started.via,
      raisePerSec: Number(((count * 1000) / raiseMs).toFixed(1)),
      settledSec,
      wentIdle,
      worker: costs.worker!,
      growth: pids.bridge === undefined ? undefined : growth,
      bridge: costs.bridge,
      server: costs.server,
      databaseMiB: server.embedded ? sqliteMiB(server.embedded.dbFile) : undefined, // SQLite with its WAL
    };
  } finally {
    for (const child of children.reverse()) await child.stop();
    await client.connection.close();
    await server.stop();
  }
}

/** Our side: the worker and the bridge as deployed, `batches` of 10 raised through the bridge. */
function oursSide(dir: string, batches: number, concurrency: number) {
  return async (server: BenchServer, client: Client, children: Stoppable[]): Promise<Started> => {
    const prefix = `${runPrefix}-scale`;
    const agent = await startTestAgent();
    children.push({ stop: () => agent.close() });
    // The worker finds the agent's card in the bridge's principals file when it delivers a lapse.
    const token = `agent-${runPrefix}`;
    const principals = [{ id: 'bench-agent', roles: ['agent' as const], cardUrl: agent.cardUrl }];
    const tokens = { 'bench-agent': token };
    const principalsFile = writePrincipalsFile(principals, { tokens, file: path.join(dir, 'principals.json') });
    // As deployed: the image builds the bundle once and the worker loads it, which keeps webpack (150 MiB) out of it.
    const bundle = path.join(dir, 'workflow-bundle.js');
    writeFileSync(bundle, await bundleWorkflows());
    progress('scale (ours): starting the worker process (src/worker.ts, prebuilt workflow bundle) and the bridge');
    const { worker, bridge, bridgeUrl } = await startWatcherProcesses(
      server,
      { queue: prefix, dir, bundle, principalsFile },
      children,
    );
    const dueAt = monthsAhead();
    const raiseBatch = (b: number) =>
      postJson(`${bridgeUrl}/a2a/events`, token, artifactUpdate(batchOf(prefix, b, 10, dueAt), `${prefix}-task-${b}`));
    progress(`scale (ours): raising ${batches * 10} expectations through the bridge in batches of 10`);
    return {
      pids: { worker: worker.pid, bridge: bridge.pid },
      via: 'bridge, batches of 10',
      raise: (raised) => runPool(batches, concurrency, raiseBatch, { onProgress: (done) => raised(done * 10) }),
      // At 100,000 the worker works through its backlog for hours on 2 cores: the wait grows with the count.
      afterRaising: () =>
        waitRoutersStarted(client, prefix, routersOf(batchKeys(prefix, batches, 10), prefix).size, {
          label: 'scale (ours)',
          timeoutMs: Math.max(3_600_000, batches * 2_500),
        }),
    };
  };
}

/** The raw side: `count` workflows sleeping six months, with their own worker process. */
function rawSide(dir: string, count: number, bundle: string, concurrency: number) {
  return async (server: BenchServer, client: Client, children: Stoppable[]): Promise<Started> => {
    const queue = `${runPrefix}-scale-raw`;
    const { worker } = await startBaselineWorker(server, { queue, bundle, dir }, children);
    const dueMs = Date.parse(monthsAhead());
    const start = (i: number) =>
      client.workflow.start('sleepWorkflow', { workflowId: `${queue}-${i}`, taskQueue: queue, args: [dueMs] });
    progress(`scale (raw): starting ${count} workflows sleeping six months`);
    return {
      pids: { worker: worker.pid },
      via: 'client.workflow.start',
      raise: (raised) => runPool(count, concurrency, start, { onProgress: raised }),
    };
  };
}

export async function runScale(
  config: Config,
  dir: string,
  options: {
    count: number;
    concurrency: number;
    baselineBundle: string;
    sides: Set<'ours' | 'raw'>;
    server: ServerKind;
  },
) {
  const batches = Math.ceil(options.count / 10);
  const count = batches * 10;
  const side = (name: 'ours' | 'raw', start: Parameters<typeof measureSide>[3]) =>
    options.sides.has(name)
      ? measureSide(config, path.join(dir, name), { label: `scale (${name})`, kind: options.server, count }, start)
      : undefined;
  const ours = await side('ours', oursSide(path.join(dir, 'ours'), batches, options.concurrency));
  const raw = await side('raw', rawSide(path.join(dir, 'raw'), count, options.baselineBundle, options.concurrency));
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
      database: both((s) => s.databaseMiB),
    },
  };
}
