/**
 * Scenario 4, scale: N open expectations due months ahead. The worker (`src/worker.ts`), the bridge
 * (`src/bridge.ts`) and the dev server run as separate processes, each on a fresh server, so that resident memory
 * (VmRSS), database size (SQLite + WAL) and CPU over 30 s of idle can be read per process. Against the raw
 * baseline: N workflows each sleeping on one timer months ahead, with their own worker process.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import { startExpectation } from '../../src/temporal/expectations.js';
import { bundleWorkflows } from '../../src/temporal/workflow-bundle.js';
import { expectationLinks } from '../../core/ids.js';
import { startTestAgent } from '../../test/support/agent.js';
import { spawnEntry, type Child } from '../lib/child.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs, memoryMiB, sqliteMiB } from '../lib/proc.js';
import { delay, progress } from '../lib/progress.js';
import { freePort, startServer, type BenchServer, type ServerKind } from '../lib/server.js';
import {
  routersOf,
  spawnBaselineWorker,
  waitRoutersStarted,
  watcherEnv,
  writeAgentPrincipals,
} from '../lib/watcher-processes.js';
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
  /** From the first raise until every raise had settled, s (over several invocations: their raising and waiting summed). */
  settledSec: number;
  /** False when the worker never went idle (its figures were read anyway). */
  wentIdle: boolean;
  worker: ProcessCost;
  /** The worker's and the bridge's RSS as the count grew: sampled once past each quarter of the raises. */
  growth?: Array<{ raised: number; workerMiB: number; bridgeMiB: number }>;
  /** Invocations the side took (`--scale-state`), when more than one. */
  segments?: number;
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
  ratios: { workerRss?: number; serverRss?: number; database?: number };
}

const IDLE_WINDOW_MS = 30_000;

/**
 * `--scale-state=<dir>` (bench/run.ts): a side that runs over several invocations, for a count that takes longer
 * than one sitting (100,000 raises take hours on 2 cores). The side's server keeps its data in `dir` and its
 * progress in `dir/<side>/progress.json`; an invocation raises until `budgetMs` has passed, keeps what it raised,
 * and ends with SegmentEnded. The same command goes on where it stopped, and the one that raises the last unit
 * waits for it to settle and measures, as a run in one piece does.
 */
export interface ScaleSegments {
  dir: string;
  budgetMs?: number;
}

/** Thrown when a segmented side has spent its budget before raising its count: not a failure, run it again. */
export class SegmentEnded extends Error {}

/** One invocation's part of a segmented side. */
interface SegmentRecord {
  startedAt: string;
  from: number;
  to: number;
  raiseSec: number;
  /** Time it waited for the side to settle, when it did. */
  settleSec?: number;
  peakMiB: Record<string, number>;
}

/** How far a side got, kept between the invocations of a segmented run. */
interface SideProgress {
  kind: ServerKind;
  count: number;
  via: string;
  /** Prefix of the batches' and workflows' ids and of the task queue, the same in every segment. */
  prefix: string;
  dueAt: string;
  /** Every unit (a batch of 10, or one start) below this index is raised. */
  done: number;
  /** Time spent raising, summed over the segments, ms. */
  raiseMs: number;
  /** Time spent waiting for the side to settle, summed over the invocations that waited, ms. */
  settleMs?: number;
  /** RSS of each process before anything was raised, MiB (the first segment's). */
  emptyRssMiB?: Record<string, number>;
  growth: NonNullable<ScaleSide['growth']>;
  segments: SegmentRecord[];
  /**
   * The invocation under way, saved with the progress: one killed before it could record itself (a kill while it
   * raised or waited to settle) is moved into `segments` by the next, so that its time and peaks still count.
   */
  current?: SegmentRecord;
  /** The side's figures, once its last segment has measured them: a later invocation reports them as they are. */
  result?: ScaleSide;
}

/** A side's progress: read from its file in a segmented run (refused if it is another run's), else fresh. */
function openProgress(file: string | undefined, fresh: Pick<SideProgress, 'kind' | 'count' | 'via'>): SideProgress {
  if (file && existsSync(file)) {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as SideProgress;
    if (kept.kind !== fresh.kind || kept.count !== fresh.count || kept.via !== fresh.via) {
      throw new Error(
        `--scale-state: ${file} holds a run of ${kept.count} on the ${kept.kind} server via ${kept.via}, not ${fresh.count} on the ${fresh.kind} server via ${fresh.via}; give another directory`,
      );
    }
    return kept;
  }
  return {
    ...fresh,
    prefix: `${runPrefix}-scale`,
    dueAt: monthsAhead(),
    done: 0,
    raiseMs: 0,
    growth: [],
    segments: [],
  };
}

function saveProgress(file: string | undefined, state: SideProgress): void {
  if (!file) return;
  writeFileSync(`${file}.tmp`, JSON.stringify(state, null, 1));
  renameSync(`${file}.tmp`, file);
}

/**
 * Raises units `state.done`..`total - 1` at `concurrency`, keeping `state.done` at the first unit not yet raised
 * (units finish out of order; one raised again after a restart is answered `unchanged`) and saving it every 10 s.
 * Takes no new unit once `budgetMs` has passed. Resolves with whether every unit is raised.
 */
async function raiseUnits(
  state: SideProgress,
  file: string | undefined,
  /** What to save, given the raising time so far (the state with this invocation's segment as `current`). */
  snapshot: (raiseMs: number) => SideProgress,
  total: number,
  concurrency: number,
  budgetMs: number | undefined,
  unit: (index: number) => Promise<unknown>,
  onProgress: (done: number) => void,
): Promise<boolean> {
  const from = state.done;
  const finished = new Set<number>();
  const t0 = performance.now();
  let savedAt = t0;
  const pool = await runPool(total - from, concurrency, (i) => unit(from + i), {
    onProgress: (done) => onProgress(from + done),
    onDone: (i) => {
      finished.add(from + i);
      while (finished.delete(state.done)) state.done++;
      if (performance.now() - savedAt >= 10_000) {
        savedAt = performance.now();
        saveProgress(file, snapshot(state.raiseMs + (savedAt - t0)));
      }
    },
    stop: () => budgetMs !== undefined && performance.now() - t0 >= budgetMs,
  });
  state.raiseMs += performance.now() - t0;
  saveProgress(file, snapshot(state.raiseMs));
  if (pool.errors.length > 0) throw new Error(`raising failed: ${pool.errors[0]}`);
  return state.done >= total;
}

/** Where this invocation's part of a side begins. */
interface SegmentStart {
  from: number;
  startedAt: string;
  raiseMsBefore: number;
  /** Time this invocation has waited for the side to settle, ms. */
  settleMs: number;
}

/** Begins this invocation's part; one a killed invocation left as `current` is recorded first. */
function startSegment(state: SideProgress): SegmentStart {
  if (state.current) state.segments.push(state.current);
  delete state.current;
  return { from: state.done, startedAt: new Date().toISOString(), raiseMsBefore: state.raiseMs, settleMs: 0 };
}

function segmentRecord(
  state: SideProgress,
  start: SegmentStart,
  peakMiB: Record<string, number>,
  raiseMs = state.raiseMs,
): SegmentRecord {
  const { from, startedAt, raiseMsBefore, settleMs } = start;
  const settled = settleMs > 0 ? { settleSec: Math.round(settleMs / 1000) } : {};
  return {
    startedAt,
    from,
    to: state.done,
    raiseSec: Math.round((raiseMs - raiseMsBefore) / 1000),
    ...settled,
    peakMiB,
  };
}

/** The progress to save as it goes: this invocation's part as `current`, with each process's peak RSS so far. */
function progressSnapshot(state: SideProgress, start: SegmentStart, pids: Record<string, number>) {
  return (raiseMs: number): SideProgress => ({
    ...state,
    raiseMs,
    current: segmentRecord(state, start, memoryOf(pids, 'peak'), raiseMs),
  });
}

/** Records a segment that ended at its budget, with each process's peak RSS, and says how to go on. */
function endSegment(
  state: SideProgress,
  file: string,
  side: string,
  start: SegmentStart,
  pids: Record<string, number>,
  unitSize: number,
): never {
  state.segments.push(segmentRecord(state, start, memoryOf(pids, 'peak')));
  saveProgress(file, state);
  throw new SegmentEnded(
    `scale (${side}): ${state.done * unitSize} of ${state.count} raised after ${state.segments.length} segment(s), ${(state.raiseMs / 60_000).toFixed(1)} min of raising; kept in ${path.dirname(file)}: run the same command again to go on`,
  );
}

/**
 * Waits for a side to settle, saving the time waited every 10 s: at 100,000 the worker drains its backlog for
 * longer than a sitting, and an invocation killed meanwhile leaves its wait counted for the next to go on from.
 * Returns the time from the first raise until settled, summed over the invocations, s.
 */
async function settle<T>(
  state: SideProgress,
  file: string | undefined,
  start: SegmentStart,
  /** The same as the raising saved with (`progressSnapshot`): it reads the wait from `start`. */
  snapshot: (raiseMs: number) => SideProgress,
  wait: () => Promise<T>,
): Promise<{ waited: T; settledSec: number }> {
  const t0 = performance.now();
  const before = state.settleMs ?? 0;
  const mark = () => {
    start.settleMs = performance.now() - t0;
    state.settleMs = before + start.settleMs;
  };
  const saver = file
    ? setInterval(() => {
        mark();
        saveProgress(file, snapshot(state.raiseMs));
      }, 10_000)
    : undefined;
  try {
    const waited = await wait();
    mark();
    return { waited, settledSec: Number(((state.raiseMs + state.settleMs!) / 1000).toFixed(1)) };
  } finally {
    clearInterval(saver);
  }
}

/** Keeps a side's figures in its progress (a segmented run's later invocations report them) and returns them. */
function keepResult(file: string | undefined, state: SideProgress, result: ScaleSide): ScaleSide {
  state.result = result;
  saveProgress(file, state);
  return result;
}

function doneBefore(side: string, result: ScaleSide): ScaleSide {
  progress(`scale (${side}): all ${result.count} raised and measured by an earlier invocation; its figures stand`);
  return result;
}

/** Records the segment that measured the side, and gives each process the highest peak RSS of any segment. */
function closeSegment(state: SideProgress, start: SegmentStart, costs: Record<string, ProcessCost>): void {
  state.segments.push(
    segmentRecord(state, start, Object.fromEntries(Object.entries(costs).map(([name, cost]) => [name, cost.peakMiB]))),
  );
  for (const [name, cost] of Object.entries(costs)) {
    for (const segment of state.segments) cost.peakMiB = Math.max(cost.peakMiB, segment.peakMiB[name] ?? 0);
  }
}

/** docker-compose.yml's worker runs with this (docs/operations.md, "A worker's memory"). */
export const DEPLOYED_WORKER_NODE_OPTIONS = '--max-old-space-size=384';

/**
 * How long a worker may take to go idle once the raising is done: at least 30 min, and 100 ms a raise (the dev server
 * left 184,000 workflow tasks queued after 100,000 raises, which a worker runs at about 30 a second).
 */
const idleTimeoutMs = (count: number) => Math.max(1_800_000, count * 100);

/**
 * Waits until the process has used under `thresholdMs` of CPU in each of two consecutive 2 s windows. After
 * `timeoutMs` it goes on with a warning (a worker that never idles is a finding, not a reason to lose the run).
 */
async function waitIdle(pid: number, what: string, timeoutMs: number, thresholdMs = 60): Promise<boolean> {
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
      progress(
        `  waiting for ${what} to go idle (${Math.round((Date.now() - started) / 1000)} s): ${Math.round(used)} ms CPU in the last 2 s`,
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
    costs[name] = {
      rssMiB: memory.rss,
      peakMiB: memory.peak,
      emptyRssMiB: empty[name]!,
      idleCpuPct: Number((((cpuMs(pid) - cpu0[name]!) / IDLE_WINDOW_MS) * 100).toFixed(2)),
    };
  }
  return costs;
}

/** Each process's resident memory now (`rss`) or its peak (`peak`, VmHWM), MiB. */
function memoryOf(pids: Record<string, number>, which: 'rss' | 'peak'): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, memoryMiB(pid)[which]]));
}

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

async function oursSide(
  config: Config,
  dir: string,
  count: number,
  via: 'bridge' | 'direct',
  concurrency: number,
  workerEnv: Record<string, string>,
  kind: ServerKind,
  segments?: ScaleSegments,
): Promise<ScaleSide> {
  const batches = Math.ceil(count / 10);
  const viaLabel = via === 'bridge' ? 'bridge, batches of 10' : 'startExpectation';
  const progressFile = segments && path.join(dir, 'ours', 'progress.json');
  mkdirSync(path.join(dir, 'ours'), { recursive: true });
  const state = openProgress(progressFile, { kind, count: batches * 10, via: viaLabel });
  if (state.result) return doneBefore('ours', state.result);
  const server = await startServer(config, serverDir(dir, 'ours', kind), 'scale (ours)', kind);
  const queue = state.prefix;
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
    for (const name of ['WATCHER_WORKFLOW_BUNDLE', 'NODE_OPTIONS'])
      if (workerVars[name] === '') delete workerVars[name];
    // Node flags NODE_OPTIONS refuses (e.g. `--cpu-prof --cpu-prof-dir=…` to profile the worker), space-separated.
    const nodeArgs = (workerVars.WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
    delete workerVars.WORKER_NODE_ARGS;
    const workerBundle = workerVars.WATCHER_WORKFLOW_BUNDLE ? 'prebuilt' : 'bundled at start';
    progress(`scale (ours): starting the worker process (src/worker.ts, workflows ${workerBundle})`);
    const worker = spawnEntry(
      'src/worker.ts',
      [],
      { ...env, ...workerVars },
      path.join(dir, 'ours', 'worker.log'),
      nodeArgs,
    );
    children.push(worker);
    await worker.waitFor(/worker running/);
    const port = await freePort();
    const bridge = spawnEntry(
      'src/bridge.ts',
      [],
      { ...env, PORT: String(port), WATCHER_PRINCIPALS_FILE: principalsFile },
      path.join(dir, 'ours', 'bridge.log'),
    );
    children.push(bridge);
    await bridge.waitFor(/bridge listening/);
    const pids: Record<string, number> = { worker: worker.pid, bridge: bridge.pid };
    if (server.embedded) pids.server = server.embedded.pid;
    state.emptyRssMiB ??= memoryOf(pids, 'rss');

    const { dueAt, prefix } = state;
    const unitSize = via === 'bridge' ? 10 : 1;
    const tasks = batches * (10 / unitSize);
    const segment = startSegment(state);
    const { from } = segment;
    progress(
      `scale (ours): raising ${batches * 10} expectations ${via === 'bridge' ? 'through the bridge in batches of 10' : 'with startExpectation'}` +
        (from > 0 ? `, going on from ${from * unitSize} (segment ${state.segments.length + 1})` : ''),
    );
    const reportRate = rateReporter('scale (ours) raised', tasks - from, unitSize);
    const report = (done: number) => {
      reportRate(done - from);
      if (done * 4 < tasks * (state.growth.length + 1)) return;
      const sample = {
        raised: done * unitSize,
        workerMiB: memoryMiB(worker.pid).rss,
        bridgeMiB: memoryMiB(bridge.pid).rss,
      };
      state.growth.push(sample);
      // Printed as taken, so that a run stopped before its end keeps them in its log.
      progress(
        `scale (ours): ${sample.raised} raised, worker ${sample.workerMiB} MiB RSS, bridge ${sample.bridgeMiB} MiB`,
      );
    };
    const raise =
      via === 'bridge'
        ? (b: number) =>
            postJson(
              `http://127.0.0.1:${port}/a2a/events`,
              token,
              artifactUpdate(batchOf(prefix, b, 10, dueAt), `${prefix}-task-${b}`),
            )
        : (i: number) => {
            const expectation = batchOf(prefix, Math.floor(i / 10), 10, dueAt)[i % 10]!;
            return startExpectation(client, queue, {
              expectation,
              // The principal id only, as the bridge raises it: the card is in the principals file.
              agent: { id: 'bench-agent' },
              origin: { taskId: `${prefix}-task-${Math.floor(i / 10)}`, contextId: `ctx-${Math.floor(i / 10)}` },
              lineage: 0,
              links: expectationLinks(expectation, queue),
              settings: { lateWindow: 'P30D', factRetention: 'P7D' },
            });
          };
    const snapshot = progressSnapshot(state, segment, pids);
    const all = await raiseUnits(state, progressFile, snapshot, tasks, concurrency, segments?.budgetMs, raise, report);
    if (!all) endSegment(state, progressFile!, 'ours', segment, pids, unitSize);
    // At 100,000 the worker works through its backlog for hours on 2 cores: the waits grow with the count.
    const { waited: wentIdle, settledSec } = await settle(state, progressFile, segment, snapshot, async () => {
      await waitRoutersStarted(client, queue, routersOf(batchKeys(prefix, batches, 10), queue).size, {
        label: 'scale (ours)',
        timeoutMs: Math.max(3_600_000, count * 250),
      });
      return waitIdle(worker.pid, 'the worker', idleTimeoutMs(count));
    });
    progress(
      `scale (ours): settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`,
    );
    const costs = await measure(pids, state.emptyRssMiB);
    closeSegment(state, segment, costs);
    return keepResult(progressFile, state, {
      count: batches * 10,
      via: viaLabel,
      raisePerSec: Number(((batches * 10 * 1000) / state.raiseMs).toFixed(1)),
      settledSec,
      wentIdle,
      worker: costs.worker!,
      growth: state.growth,
      ...(state.segments.length > 1 ? { segments: state.segments.length } : {}),
      workerBundle,
      bridge: costs.bridge,
      server: costs.server,
      databaseMiB: server.embedded ? sqliteMiB(server.embedded.dbFile) : undefined,
    });
  } finally {
    for (const child of children.reverse()) await child.stop();
    await client.connection.close();
    await agent.close();
    await server.stop();
  }
}

/**
 * The raw worker's bounds, as the watcher worker's in `oursSide`: its NODE_OPTIONS (compose's heap bound unless
 * `--worker-env` overrides it, empty: none) and the cache it sets (WATCHER_WORKER_MAX_CACHED_WORKFLOWS; absent, both
 * apply the watcher's default rule to the same heap).
 */
function rawWorkerBounds(workerEnv: Record<string, string>): { nodeOptions?: string; maxCachedWorkflows?: number } {
  const nodeOptions = workerEnv.NODE_OPTIONS ?? DEPLOYED_WORKER_NODE_OPTIONS;
  const cache = workerEnv.WATCHER_WORKER_MAX_CACHED_WORKFLOWS;
  return {
    ...(nodeOptions === '' ? {} : { nodeOptions }),
    ...(cache ? { maxCachedWorkflows: Number(cache) } : {}),
  };
}

async function rawSide(
  config: Config,
  dir: string,
  count: number,
  bundle: string,
  concurrency: number,
  kind: ServerKind,
  workerEnv: Record<string, string>,
  segments?: ScaleSegments,
): Promise<ScaleSide> {
  const progressFile = segments && path.join(dir, 'raw', 'progress.json');
  mkdirSync(path.join(dir, 'raw'), { recursive: true });
  const state = openProgress(progressFile, { kind, count, via: 'client.workflow.start' });
  if (state.result) return doneBefore('raw', state.result);
  const server = await startServer(config, serverDir(dir, 'raw', kind), 'scale (raw)', kind);
  const queue = `${state.prefix}-raw`;
  const client = await connect(server);
  let worker: Child | undefined;
  try {
    worker = spawnBaselineWorker({
      server,
      queue,
      bundle,
      logFile: path.join(dir, 'raw', 'worker.log'),
      ...rawWorkerBounds(workerEnv),
    });
    await worker.waitFor(/baseline worker running/);
    const workerPid = worker.pid;
    const pids: Record<string, number> = { worker: workerPid };
    if (server.embedded) pids.server = server.embedded.pid;
    state.emptyRssMiB ??= memoryOf(pids, 'rss');
    const dueMs = Date.parse(state.dueAt);
    const segment = startSegment(state);
    const { from } = segment;
    progress(
      `scale (raw): starting ${count} workflows sleeping until ${state.dueAt}${from > 0 ? `, going on from ${from}` : ''}`,
    );
    const start = (i: number) =>
      client.workflow
        .start('sleepWorkflow', { workflowId: `${queue}-${i}`, taskQueue: queue, args: [dueMs] })
        .catch((error: unknown) => {
          // Started by the segment before, which stopped before it could count it.
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        });
    const reportRate = rateReporter('scale (raw) started', count - from);
    const snapshot = progressSnapshot(state, segment, pids);
    const all = await raiseUnits(state, progressFile, snapshot, count, concurrency, segments?.budgetMs, start, (done) =>
      reportRate(done - from),
    );
    if (!all) endSegment(state, progressFile!, 'raw', segment, pids, 1);
    const { waited: wentIdle, settledSec } = await settle(state, progressFile, segment, snapshot, () =>
      waitIdle(workerPid, 'the baseline worker', idleTimeoutMs(count)),
    );
    progress(`scale (raw): settled after ${settledSec} s; measuring memory and ${IDLE_WINDOW_MS / 1000} s of idle CPU`);
    const costs = await measure(pids, state.emptyRssMiB);
    closeSegment(state, segment, costs);
    return keepResult(progressFile, state, {
      count,
      via: 'client.workflow.start',
      raisePerSec: Number(((count * 1000) / state.raiseMs).toFixed(1)),
      settledSec,
      wentIdle,
      ...(state.segments.length > 1 ? { segments: state.segments.length } : {}),
      worker: costs.worker!,
      server: costs.server,
      databaseMiB: server.embedded ? sqliteMiB(server.embedded.dbFile) : undefined,
    });
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
    /** A run over several invocations, its servers' data in `segments.dir` instead of `dir`. */
    segments?: ScaleSegments;
  },
): Promise<ScaleResult> {
  const kind = options.server ?? 'dev';
  const { segments } = options;
  const sideDir = segments?.dir ?? dir;
  mkdirSync(sideDir, { recursive: true });
  const count = Math.ceil(options.count / 10) * 10;
  const ours = options.sides.has('ours')
    ? await oursSide(config, sideDir, count, options.via, options.concurrency, options.workerEnv, kind, segments)
    : undefined;
  const raw = options.sides.has('raw')
    ? await rawSide(
        config,
        sideDir,
        count,
        options.baselineBundle,
        options.concurrency,
        kind,
        options.workerEnv,
        segments,
      )
    : undefined;
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
      workerRss: both((s) => s.worker.rssMiB, ratio),
      serverRss: both((s) => s.server?.rssMiB, ratio),
      database: both((s) => s.databaseMiB?.total, ratio),
    },
  };
}
