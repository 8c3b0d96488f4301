/**
 * Scenario 1, raise throughput: expectations per second through `POST /a2a/events` (one per request, and batches
 * of 10 in one artifact) at a fixed concurrency, against raw `client.workflow.start` of a no-op workflow at the same
 * concurrency. Raw runs before and after ours; the ratio uses their mean. "Accepted" is the rate of 200 answers;
 * "settled" also waits until every router the raises named runs and the watcher's task queue has no backlog (every
 * raise's first workflow task taken up; raw: every no-op workflow completed).
 */
import type { Client } from '@temporalio/client';
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { countHistory, runHistories, shareOfRuns, type HistoryCount } from '../lib/history.js';
import { postJson, runPool } from '../lib/load.js';
import {
  artifactUpdate,
  batchKeys,
  batchOf,
  expectationFor,
  factKeyOf,
  monthsAhead,
  runPrefix,
} from '../lib/payloads.js';
import { cpuMs } from '../lib/proc.js';
import { progress, waitUntil } from '../lib/progress.js';
import type { Stack } from '../lib/stack.js';
import { ratio, summarise, type Summary } from '../lib/stats.js';

export interface ThroughputOptions {
  concurrency: number;
  /** Requests of one expectation each. */
  singles: number;
  /** Requests of 10 expectations each. */
  batches: number;
  /** Raw starts per baseline phase. */
  rawStarts: number;
}

export interface Phase {
  label: string;
  acceptedPerSec: number;
  settledPerSec: number;
  /** Per-request latency (ms). */
  latencyMs: Summary;
  /** CPU per expectation, ms. node: the benchmark process (bridge, worker, load); server: the Temporal server's processes; database: the cluster's PostgreSQL. */
  cpuMsPerItem: { node: number; server?: number; database?: number };
}

export interface ThroughputResult {
  options: ThroughputOptions;
  raw: Phase[];
  single: Phase;
  batch: Phase;
  rawAcceptedPerSec: number;
  rawSettledPerSec: number;
  ratios: { single: number; batch: number; singleSettled: number; batchSettled: number };
  histories: { ours: HistoryCount[]; raw: HistoryCount };
}

function cpuMeter(stack: Stack) {
  // The dev server's process, or the cluster's four service processes; PostgreSQL apart (postmaster and backends).
  const serverPids = stack.server.serverPids();
  const serverCpu = () => serverPids.reduce((total, pid) => total + cpuMs(pid), 0);
  const databaseCpu = stack.server.databaseCpuMs;
  const node0 = process.cpuUsage();
  const server0 = serverPids.length > 0 ? serverCpu() : 0;
  const database0 = databaseCpu?.() ?? 0;
  return (items: number) => {
    const node = process.cpuUsage(node0);
    return {
      node: Number(((node.user + node.system) / 1000 / items).toFixed(2)),
      server: serverPids.length > 0 ? Number(((serverCpu() - server0) / items).toFixed(2)) : undefined,
      ...(databaseCpu ? { database: Number(((databaseCpu() - database0) / items).toFixed(2)) } : {}),
    };
  };
}

/**
 * Runs `requests` of `size` expectations each with `send` at the concurrency, then waits for `settled`: the phase's
 * accepted and settled rates, request latency and CPU per expectation.
 */
async function phase(
  stack: Stack,
  label: string,
  counts: { requests: number; size: number; concurrency: number },
  send: (i: number) => Promise<unknown>,
  /** Gets the count of requests that failed. */
  settled: (failed: number) => Promise<void>,
): Promise<Phase> {
  const meter = cpuMeter(stack);
  const t0 = performance.now();
  const pool = await runPool(counts.requests, counts.concurrency, send, {
    onProgress: (done) => progress(`  ${label}: ${done}/${counts.requests} requests answered`),
  });
  if (pool.errors.length > 0) progress(`  ${label}: ${pool.errors.length} errors, first: ${pool.errors[0]}`);
  await settled(pool.errors.length);
  const settledMs = performance.now() - t0;
  const items = counts.requests * counts.size;
  const perSec = (ms: number) => Number(((items * 1000) / ms).toFixed(1));
  const result: Phase = {
    label,
    acceptedPerSec: perSec(pool.elapsedMs),
    settledPerSec: perSec(settledMs),
    latencyMs: summarise(pool.latenciesMs),
    cpuMsPerItem: meter(items),
  };
  progress(
    `  ${label}: ${result.acceptedPerSec}/s accepted, ${result.settledPerSec}/s settled, request p99 ${result.latencyMs.p99} ms`,
  );
  return result;
}

let rawStarted = 0;

/** Raw starts of a no-op workflow, settled once every one started so far has completed. */
function rawPhase(stack: Stack, options: ThroughputOptions, label: string): Promise<Phase> {
  progress(`throughput: ${label}: ${options.rawStarts} raw workflow starts at concurrency ${options.concurrency}`);
  const counts = { requests: options.rawStarts, size: 1, concurrency: options.concurrency };
  const completed = `WorkflowType = 'noopWorkflow' AND TaskQueue = '${stack.baselineQueue}' AND ExecutionStatus = 'Completed'`;
  return phase(
    stack,
    label,
    counts,
    (i) =>
      stack.client.workflow.start('noopWorkflow', {
        workflowId: `${runPrefix}-${label}-${i}`,
        taskQueue: stack.baselineQueue,
        args: [],
      }),
    (failed) => {
      rawStarted += options.rawStarts - failed;
      return waitUntil(
        'every no-op workflow to complete',
        async () => (await stack.client.workflow.count(completed)).count >= rawStarted,
        { timeoutMs: 600_000, intervalMs: 500 },
      );
    },
  );
}

/** Raises through the bridge, `size` to a request, settled once their routers run and the queue has no backlog. */
function oursPhase(
  stack: Stack,
  options: ThroughputOptions,
  label: string,
  size: number,
  requests: number,
): Promise<Phase> {
  const prefix = `${runPrefix}-${label}`;
  progress(
    `throughput: ${label}: ${requests} requests of ${size} expectation(s) at concurrency ${options.concurrency}`,
  );
  const dueAt = monthsAhead();
  const expectations = (i: number) =>
    size === 1 ? [expectationFor(`${prefix}-${i}`, `${prefix}-S${i}`, dueAt)] : batchOf(prefix, i, size, dueAt);
  return phase(
    stack,
    label,
    { requests, size, concurrency: options.concurrency },
    (i) =>
      postJson(
        `${stack.bridgeUrl}/a2a/events`,
        stack.tokens.agent,
        artifactUpdate(expectations(i), `${prefix}-task-${i}`),
      ),
    () => {
      stack.expectRaised(
        size === 1
          ? Array.from({ length: requests }, (_, i) => factKeyOf(`${prefix}-${i}`))
          : batchKeys(prefix, requests, size),
      );
      return stack.waitSettled();
    },
  );
}

/**
 * The histories one single raise leaves (its expectation, and its share of its fact router's: a raise signals no other
 * router) and one raw start's.
 */
async function raiseHistories(client: Client, queue: string, singleId: string, rawId: string) {
  const factKey = factKeyOf(singleId);
  const ours = await Promise.all([
    countHistory(client, expectationWorkflowId(singleId)),
    runHistories(client, factRouterWorkflowId(factKey, queue)).then(
      (runs) => shareOfRuns(runs, [JSON.stringify(factKey), expectationWorkflowId(singleId)]).count,
    ),
  ]);
  return { ours, raw: await countHistory(client, rawId) };
}

export async function runThroughput(stack: Stack, options: ThroughputOptions): Promise<ThroughputResult> {
  // Warm-up: the bridge fetches the card once, both workers have their bundles loaded.
  await oursPhase(stack, { ...options, concurrency: 4 }, 'warmup', 1, 8);
  await runPool(8, 4, (i) =>
    stack.client.workflow.execute('noopWorkflow', {
      workflowId: `${runPrefix}-rawwarm-${i}`,
      taskQueue: stack.baselineQueue,
      args: [],
    }),
  );
  rawStarted += 8;

  const rawBefore = await rawPhase(stack, options, 'raw-before');
  const single = await oursPhase(stack, options, 'single', 1, options.singles);
  const batch = await oursPhase(stack, options, 'batch10', 10, options.batches);
  const rawAfter = await rawPhase(stack, options, 'raw-after');

  const rawAcceptedPerSec = Number(((rawBefore.acceptedPerSec + rawAfter.acceptedPerSec) / 2).toFixed(1));
  const rawSettledPerSec = Number(((rawBefore.settledPerSec + rawAfter.settledPerSec) / 2).toFixed(1));
  const histories = await raiseHistories(
    stack.client,
    stack.watcherQueue,
    `${runPrefix}-single-0`,
    `${runPrefix}-raw-before-0`,
  );
  return {
    options,
    raw: [rawBefore, rawAfter],
    single,
    batch,
    rawAcceptedPerSec,
    rawSettledPerSec,
    ratios: {
      single: ratio(single.acceptedPerSec, rawAcceptedPerSec),
      batch: ratio(batch.acceptedPerSec, rawAcceptedPerSec),
      singleSettled: ratio(single.settledPerSec, rawSettledPerSec),
      batchSettled: ratio(batch.settledPerSec, rawSettledPerSec),
    },
    histories,
  };
}
