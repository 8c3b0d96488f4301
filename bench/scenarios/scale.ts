/**
 * Scenario 4, scale (BENCHMARKS.md, "What is measured"): N open expectations, each side's processes apart on a fresh
 * server, so that resident memory (VmRSS), database size and CPU over 30 s of idle are read per process.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import { bundleWorkflows } from '../../src/temporal/workflow-bundle.js';
import { lapseOf, startTestAgent, type TestAgent } from '../../test/support/agent.js';
import { writePrincipalsFile } from '../../test/support/agents.js';
import type { Stoppable } from '../lib/child.js';
import { postJsonResending, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, ceilSecond, instant, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs, memoryMiB } from '../lib/proc.js';
import { backlogOf } from '../lib/backlog.js';
import { delay, progress, waitUntil } from '../lib/progress.js';
import { connect, startServer, type BenchServer, type ServerKind } from '../lib/server.js';
import { ratio, summarise } from '../lib/stats.js';
import { routersOf, startBaselineWorker, startWatcherProcesses, waitRoutersStarted } from '../lib/watcher-processes.js';

/** Resident memory after raising and 30 s of idle, its peak (VmHWM), before raising (MiB); CPU over the idle 30 s. */
export interface ProcessCost {
  rssMiB: number;
  peakMiB: number;
  emptyRssMiB: number;
  idleCpuPct: number;
}

export type ScaleSide = Exclude<Awaited<ReturnType<typeof measureSide>>, undefined>;
export type ScaleResult = Awaited<ReturnType<typeof runScale>>;

const IDLE_WINDOW_MS = 30_000;

/**
 * A run over several invocations (`--scale-state=<dir>`): each side keeps its server's data and how far it got under
 * `dir`, and raises for at most `budgetMs` an invocation; the invocation that raises the last one measures.
 */
export interface ScaleResume {
  dir: string;
  budgetMs: number;
}

/** What a side's state directory remembers between invocations: its ids, its due instant, the raises done. */
interface SideProgress {
  prefix: string;
  dueAt: string;
  count: number;
  raised: number;
  /** The time spent raising them, over every invocation. */
  raisingMs: number;
}

function readProgress(file: string, fresh: SideProgress): SideProgress {
  if (!existsSync(file)) return fresh;
  const kept = JSON.parse(readFileSync(file, 'utf8')) as SideProgress;
  if (kept.count !== fresh.count)
    throw new Error(`${file}: a run of ${kept.count} open is kept there, not of ${fresh.count}; use another directory`);
  return kept;
}

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
  /**
   * Raises what is left, telling `raised` the count so far every few seconds, until all are raised or `stop` says so;
   * resolves with the count raised in all (this invocation's and those before).
   */
  raise(stop: () => boolean, raised: (count: number) => void): Promise<{ errors: string[]; done: number }>;
  afterRaising?(): Promise<void>;
  /** A burst of expectations due at one instant, at about `raisePerSec`: how long their lapses took to drain. */
  burst?(raisePerSec: number): Promise<BurstDrain>;
}

/** A burst of `count` due at one instant with no grace, on top of the open ones: due → each lapse at the agent. */
export interface BurstDrain {
  count: number;
  /** From the due instant to the last lapse at the agent. */
  drainMs: number;
  lateness: ReturnType<typeof summarise>;
  /** The burst's raises had not all settled by the due instant: the lateness includes raising. */
  raisedLate: boolean;
  /**
   * The worker's RSS and peak once the burst drained (MiB). The idle figure before it may be taken with the routers out
   * of the worker's cache (a resumed run that only drained first tasks); the burst subscribes on all of them.
   */
  workerAfter?: { rssMiB: number; peakMiB: number };
}

/** Tasks a side's queue may hold before its raising waits: raising at the rate its worker settles (issue 47). */
const MAX_RAISE_BACKLOG = 500;

/**
 * Holds raising back while `queue`'s backlog is over MAX_RAISE_BACKLOG, read every 2 s. Without it the bridge
 * accepted raises faster than the worker settled them: 71,266 first workflow tasks, 70 minutes old, were waiting
 * when the 100,000th was raised (12-07).
 */
function backlogGate(client: Client, queue: string) {
  let backlog = 0;
  let stopped = false;
  const polling = (async () => {
    while (!stopped) {
      backlog = (await backlogOf(client, client.options.namespace, queue).catch(() => 0)) ?? 0;
      await delay(2_000);
    }
  })();
  return {
    async wait(): Promise<void> {
      while (backlog > MAX_RAISE_BACKLOG && !stopped) await delay(500);
    },
    async stop(): Promise<void> {
      stopped = true;
      await polling;
    },
  };
}

/**
 * Runs `one(from)` to `one(count - 1)` as raising does on either side: gated on `queue`'s backlog, until `stop` says
 * so, telling `raised` the count from 0 whose tasks have all finished; resolves with that count.
 */
async function raiseFrom(
  client: Client,
  queue: string,
  range: { from: number; count: number; concurrency: number },
  one: (index: number) => Promise<unknown>,
  report: { stop: () => boolean; raised: (count: number) => void },
): Promise<{ errors: string[]; done: number }> {
  const finished = donePrefix();
  const gate = backlogGate(client, queue);
  const next = async (i: number) => {
    await gate.wait();
    await one(range.from + i);
    finished.complete(i);
  };
  const pool = await runPool(range.count - range.from, range.concurrency, next, {
    stop: report.stop,
    onProgress: () => report.raised(range.from + finished.count),
  }).finally(() => gate.stop());
  return { errors: pool.errors, done: range.from + finished.count };
}

/** How many tasks from index 0 have all finished, as they finish in any order: what a killed run may skip next time. */
function donePrefix() {
  const finished = new Set<number>();
  let count = 0;
  return {
    complete(index: number): void {
      finished.add(index);
      while (finished.delete(count)) count++;
    },
    get count(): number {
      return count;
    },
  };
}

/** Raises `count` in batches of 10 due at one instant through `raiseBatch`, and waits for every lapse at `agent`. */
async function drainBurst(
  label: string,
  agent: TestAgent,
  options: { prefix: string; count: number; raisePerSec: number; concurrency: number },
  raiseBatch: (prefix: string, batch: number, dueAt: string) => Promise<unknown>,
): Promise<BurstDrain> {
  const batches = Math.ceil(options.count / 10);
  const leadMs = Math.max(30_000, Math.round(((batches * 10) / Math.max(options.raisePerSec, 1)) * 2_000) + 15_000);
  const dueMs = ceilSecond(Date.now() + leadMs);
  progress(
    `${label}: a burst of ${batches * 10} due at ${instant(dueMs)} (in ${Math.round(leadMs / 1000)} s), no grace`,
  );
  const raised = await runPool(batches, options.concurrency, (b) => raiseBatch(options.prefix, b, instant(dueMs)));
  if (raised.errors.length > 0) throw new Error(`${label}: raising the burst failed: ${raised.errors[0]}`);
  const raisedLate = Date.now() > dueMs;
  const mine = () => agent.received.filter((r) => lapseOf(r)?.expectationId.startsWith(`${options.prefix}-`));
  await waitUntil('every lapse of the burst at the agent', () => mine().length >= batches * 10, {
    timeoutMs: dueMs - Date.now() + 1_800_000,
    intervalMs: 200,
    onTick: () => Date.now() > dueMs && progress(`  ${label}: ${mine().length}/${batches * 10} burst lapses received`),
  });
  const lateness = mine().map((r) => r.receivedAt.getTime() - dueMs);
  const drain = { count: batches * 10, drainMs: Math.max(...lateness), lateness: summarise(lateness), raisedLate };
  progress(`${label}: the burst drained in ${drain.drainMs} ms (p50 ${drain.lateness.p50}, p99 ${drain.lateness.p99})`);
  return drain;
}

/**
 * One side on a fresh server under `dir`: `start` starts its processes (pushed to `children` for the stop); then its
 * raising rate, the time until every raise settled, the worker's and the bridge's RSS past each quarter of the raises,
 * and once its worker went idle (`wentIdle` false if it never did) what each process costs.
 */
async function measureSide(
  config: Config,
  dir: string,
  options: { label: string; kind: ServerKind; count: number; resume?: ScaleResume },
  start: (server: BenchServer, client: Client, children: Stoppable[], from: SideProgress) => Promise<Started>,
) {
  const { label, count, resume } = options;
  mkdirSync(dir, { recursive: true });
  const progressFile = path.join(dir, 'scale-progress.json');
  const from = readProgress(progressFile, {
    prefix: `${runPrefix}-scale`,
    dueAt: monthsAhead(),
    count,
    raised: 0,
    raisingMs: 0,
  });
  if (from.raised > 0) progress(`${label}: going on from ${from.raised}/${count} raised (${progressFile})`);
  // The dev server's SQLite file beside the side's logs, a cluster in a directory of its own.
  const serverDir = options.kind === 'cluster' ? path.join(dir, 'cluster') : dir;
  const server = await startServer(config, serverDir, label, options.kind);
  const client = await connect(server);
  const children: Stoppable[] = [];
  try {
    const started = await start(server, client, children, from);
    const pids: Record<string, number> = { worker: started.pids.worker };
    if (started.pids.bridge !== undefined) pids.bridge = started.pids.bridge;
    if (server.embedded) pids.server = server.embedded.pid;
    const emptyRssMiB = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, memoryMiB(pid).rss]));
    const t0 = performance.now();
    const growth: Array<{ raised: number; workerMiB: number; bridgeMiB: number }> = [];
    const quartersBefore = Math.floor((from.raised * 4) / count);
    const stop = resume ? () => performance.now() - t0 > resume.budgetMs : () => false;
    const raisingSoFarMs = () => from.raisingMs + (performance.now() - t0);
    const keep = (raised: number) => {
      if (resume)
        writeFileSync(progressFile, JSON.stringify({ ...from, raised, raisingMs: raisingSoFarMs() }, null, 2));
    };
    const raised = await started.raise(stop, (done) => {
      // Kept as it goes, so that an invocation killed before its end loses only the last few seconds of raising.
      keep(done);
      progress(
        `  ${label} raised: ${done}/${count} (${(((done - from.raised) * 1000) / (performance.now() - t0)).toFixed(1)}/s)`,
      );
      // Once past each quarter of the raises, the worker's and the bridge's RSS, printed as taken for a run cut short;
      // a resumed run counts from the quarters its earlier invocations passed, not three at once at its first report.
      if (pids.bridge === undefined || done * 4 < count * (quartersBefore + growth.length + 1)) return;
      const taken = { raised: done, workerMiB: memoryMiB(pids.worker!).rss, bridgeMiB: memoryMiB(pids.bridge).rss };
      growth.push(taken);
      progress(`${label}: ${done} raised, worker ${taken.workerMiB} MiB RSS, bridge ${taken.bridgeMiB} MiB`);
    });
    const raisingMs = raisingSoFarMs();
    if (raised.errors.length > 0) throw new Error(`${label}: raising failed: ${raised.errors[0]}`);
    const raisePerSec = Number(((raised.done * 1000) / raisingMs).toFixed(1));
    keep(raised.done);
    if (raised.done < count) {
      progress(`${label}: ${raised.done}/${count} raised at ${raisePerSec}/s; run again with the same --scale-state`);
      return undefined;
    }
    await started.afterRaising?.();
    const wentIdle = await waitIdle(pids.worker!, `${label}'s worker`, count);
    // Over every invocation: the raising before this one, and this one's raising and wait.
    const settledSec = Number((raisingSoFarMs() / 1000).toFixed(1));
    progress(`${label}: settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`);
    const cpu0 = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
    await delay(IDLE_WINDOW_MS);
    const costs: Record<string, ProcessCost> = {};
    for (const [name, pid] of Object.entries(pids)) {
      const memory = memoryMiB(pid);
      const idleCpuPct = Number((((cpuMs(pid) - cpu0[name]!) / IDLE_WINDOW_MS) * 100).toFixed(2));
      costs[name] = { rssMiB: memory.rss, peakMiB: memory.peak, emptyRssMiB: emptyRssMiB[name]!, idleCpuPct };
    }
    const databaseMiB = server.databaseMiB?.();
    // At the end, once idle: a burst due at one instant, drained on top of the `count` open.
    const drained = started.burst ? await started.burst(raisePerSec) : undefined;
    const workerAfter = (memory: { rss: number; peak: number }) => ({ rssMiB: memory.rss, peakMiB: memory.peak });
    const burst = drained && { ...drained, workerAfter: workerAfter(memoryMiB(pids.worker!)) };
    return {
      count,
      via: started.via,
      raisePerSec,
      burst,
      settledSec,
      wentIdle,
      worker: costs.worker!,
      growth: pids.bridge === undefined ? undefined : growth,
      bridge: costs.bridge,
      server: costs.server,
      databaseMiB, // SQLite with its WAL, or PostgreSQL's data directory
      databaseKiBPerOpen: databaseMiB === undefined ? undefined : Number(((databaseMiB * 1024) / count).toFixed(1)),
    };
  } finally {
    for (const child of children.reverse()) await child.stop();
    await client.connection.close();
    await server.stop();
  }
}

/**
 * Our side: the worker and the bridge as deployed, `batches` of 10 raised through the bridge; then, with a `burst`,
 * that many due at one instant.
 */
function oursSide(dir: string, batches: number, options: { concurrency: number; burst: number }) {
  const { concurrency } = options;
  return async (server: BenchServer, client: Client, children: Stoppable[], from: SideProgress): Promise<Started> => {
    const { prefix, dueAt } = from;
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
    const raiseBatch = (batchPrefix: string, b: number, due: string, grace?: string) =>
      postJsonResending(
        `${bridgeUrl}/a2a/events`,
        token,
        artifactUpdate(batchOf(batchPrefix, b, 10, due, grace), `${batchPrefix}-task-${b}`),
      );
    const first = Math.floor(from.raised / 10);
    progress(`scale (ours): raising ${(batches - first) * 10} expectations through the bridge in batches of 10`);
    return {
      pids: { worker: worker.pid, bridge: bridge.pid },
      via: 'bridge, batches of 10',
      raise: async (stop, raised) => {
        const range = { from: first, count: batches, concurrency };
        const report = { stop, raised: (done: number) => raised(done * 10) };
        const pool = await raiseFrom(client, prefix, range, (b) => raiseBatch(prefix, b, dueAt), report);
        return { errors: pool.errors, done: pool.done * 10 };
      },
      burst:
        options.burst > 0
          ? (raisePerSec) =>
              drainBurst(
                'scale (ours)',
                agent,
                { prefix: `${runPrefix}-burst`, count: options.burst, raisePerSec, concurrency },
                (burstPrefix, b, due) => raiseBatch(burstPrefix, b, due, 'PT0S'),
              )
          : undefined,
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
  return async (server: BenchServer, client: Client, children: Stoppable[], from: SideProgress): Promise<Started> => {
    const queue = `${from.prefix}-raw`;
    const { worker } = await startBaselineWorker(server, { queue, bundle, dir }, children);
    const dueMs = Date.parse(from.dueAt);
    const start = (i: number) =>
      client.workflow.start('sleepWorkflow', { workflowId: `${queue}-${i}`, taskQueue: queue, args: [dueMs] });
    progress(`scale (raw): starting ${count - from.raised} workflows sleeping six months`);
    return {
      pids: { worker: worker.pid },
      via: 'client.workflow.start',
      raise: (stop, raised) =>
        raiseFrom(client, queue, { from: from.raised, count, concurrency }, start, { stop, raised }),
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
    /** Expectations due at one instant raised once the `count` are idle (ours only; 0: none). */
    burst: number;
    resume?: ScaleResume;
  },
) {
  const batches = Math.ceil(options.count / 10);
  const count = batches * 10;
  // A resumed run keeps each side's server and progress under the state directory, not the run's.
  const home = options.resume?.dir ?? dir;
  const side = (name: 'ours' | 'raw', start: Parameters<typeof measureSide>[3]) => {
    const { server: kind, resume } = options;
    return options.sides.has(name)
      ? measureSide(config, path.join(home, name), { label: `scale (${name})`, kind, count, resume }, start)
      : undefined;
  };
  const { concurrency, burst } = options;
  const ours = await side('ours', oursSide(path.join(home, 'ours'), batches, { concurrency, burst }));
  // A resumed run whose side of ours has not finished raising leaves raw to a later invocation.
  const oursPaused = options.sides.has('ours') && ours === undefined;
  const raw = oursPaused
    ? undefined
    : await side('raw', rawSide(path.join(home, 'raw'), count, options.baselineBundle, concurrency));
  const both = (pick: (side: ScaleSide) => number | undefined) => {
    const a = ours && pick(ours);
    const b = raw && pick(raw);
    return a !== undefined && b !== undefined ? ratio(a, b) : undefined;
  };
  return {
    count,
    ours,
    raw,
    /** A side that has more to raise in a later invocation (`--scale-state`). */
    paused:
      options.sides.has('raw') && raw === undefined
        ? [...(oursPaused ? ['ours'] : []), 'raw']
        : oursPaused
          ? ['ours']
          : [],
    ratios: {
      workerRss: both((s) => s.worker.rssMiB),
      serverRss: both((s) => s.server?.rssMiB),
      database: both((s) => s.databaseMiB),
    },
  };
}
