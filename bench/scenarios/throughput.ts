/**
 * Scenario 1, raise throughput (BENCHMARKS.md, "What is measured"): raw runs before and after ours, the ratio uses
 * their mean; "settled" waits until every router the raises named runs and the queue has no backlog.
 */
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { countHistory, runHistories, shareOfRuns } from '../lib/history.js';
import { runPool } from '../lib/load.js';
import { batchKeys, factKeyOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuSince, processCpuMs } from '../lib/proc.js';
import { progress, waitUntil } from '../lib/progress.js';
import type { Stack } from '../lib/stack.js';
import { perItem, ratio, summarise } from '../lib/stats.js';

export interface ThroughputOptions {
  concurrency: number;
  /** Requests of one expectation each, of 10 each, and raw starts per baseline phase. */
  singles: number;
  batches: number;
  rawStarts: number;
}

export type ThroughputResult = Awaited<ReturnType<typeof runThroughput>>;

/**
 * Runs `requests` of `size` expectations each with `send` at the concurrency, then waits for `settled`: rates in
 * expectations a second, request latency (ms) and CPU per expectation (ms) of the benchmark's process (bridge, worker,
 * load), the Temporal server's processes and the cluster's PostgreSQL.
 */
async function phase(
  stack: Stack,
  label: string,
  counts: { requests: number; size: number; concurrency: number },
  send: (i: number) => Promise<unknown>,
  settled: (failed: number) => Promise<void>,
) {
  const { serverCpuMs, databaseCpuMs } = stack.server;
  const cpuUsed = cpuSince({ node: processCpuMs, server: serverCpuMs, database: databaseCpuMs });
  const t0 = performance.now();
  const pool = await runPool(counts.requests, counts.concurrency, send, {
    onProgress: (done) => progress(`  ${label}: ${done}/${counts.requests} requests answered`),
  });
  if (pool.errors.length > 0) progress(`  ${label}: ${pool.errors.length} errors, first: ${pool.errors[0]}`);
  await settled(pool.errors.length);
  const settledMs = performance.now() - t0;
  const items = counts.requests * counts.size;
  const perSec = (ms: number) => Number(((items * 1000) / ms).toFixed(1));
  const cpu = cpuUsed();
  const result = {
    acceptedPerSec: perSec(pool.elapsedMs),
    settledPerSec: perSec(settledMs),
    latencyMs: summarise(pool.latenciesMs),
    cpuMsPerItem: {
      node: perItem(cpu.node, items)!,
      server: perItem(cpu.server, items),
      database: perItem(cpu.database, items),
    },
  };
  progress(
    `  ${label}: ${result.acceptedPerSec}/s accepted, ${result.settledPerSec}/s settled, request p99 ${result.latencyMs.p99} ms`,
  );
  return result;
}

let rawStarted = 0;

/** Raw starts of a no-op workflow, settled once every one started so far has completed. */
function rawPhase(stack: Stack, options: ThroughputOptions, label: string) {
  progress(`throughput: ${label}: ${options.rawStarts} raw workflow starts at concurrency ${options.concurrency}`);
  const { client, baselineQueue: taskQueue } = stack;
  const completed = `WorkflowType = 'noopWorkflow' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`;
  const start = (i: number) =>
    client.workflow.start('noopWorkflow', { workflowId: `${runPrefix}-${label}-${i}`, taskQueue, args: [] });
  const counts = { requests: options.rawStarts, size: 1, concurrency: options.concurrency };
  return phase(stack, label, counts, start, (failed) => {
    rawStarted += options.rawStarts - failed;
    const all = async () => (await client.workflow.count(completed)).count >= rawStarted;
    return waitUntil('every no-op workflow to complete', all, { timeoutMs: 600_000, intervalMs: 500 });
  });
}

/** Raises through the bridge, `size` to a request, settled once their routers run and the queue has no backlog. */
function oursPhase(stack: Stack, concurrency: number, label: string, size: number, requests: number) {
  const prefix = `${runPrefix}-${label}`;
  progress(`throughput: ${label}: ${requests} requests of ${size} expectation(s) at concurrency ${concurrency}`);
  const dueAt = monthsAhead();
  const raise = (i: number) => stack.raiseBatch(prefix, i, size, dueAt);
  return phase(stack, label, { requests, size, concurrency }, raise, () => {
    stack.expectRaised(batchKeys(prefix, requests, size));
    return stack.waitSettled();
  });
}

export async function runThroughput(stack: Stack, options: ThroughputOptions) {
  const { client, baselineQueue: taskQueue } = stack;
  // Warm-up: the bridge fetches the card once, both workers have their bundles loaded.
  await oursPhase(stack, 4, 'warmup', 1, 8);
  await runPool(8, 4, (i) =>
    client.workflow.execute('noopWorkflow', { workflowId: `${runPrefix}-rawwarm-${i}`, taskQueue, args: [] }),
  );
  rawStarted += 8;

  const rawBefore = await rawPhase(stack, options, 'raw-before');
  const single = await oursPhase(stack, options.concurrency, 'single', 1, options.singles);
  const batch = await oursPhase(stack, options.concurrency, 'batch10', 10, options.batches);
  const rawAfter = await rawPhase(stack, options, 'raw-after');

  const rawAcceptedPerSec = Number(((rawBefore.acceptedPerSec + rawAfter.acceptedPerSec) / 2).toFixed(1));
  const rawSettledPerSec = Number(((rawBefore.settledPerSec + rawAfter.settledPerSec) / 2).toFixed(1));
  // What one single raise leaves: its expectation, and its share of its key's router (a raise signals no other).
  const singleId = `${runPrefix}-single-0-0`;
  const factKey = factKeyOf(singleId);
  const mentions = [JSON.stringify(factKey), expectationWorkflowId(singleId)];
  const routerShare = shareOfRuns(
    await runHistories(client, factRouterWorkflowId(factKey, stack.watcherQueue)),
    mentions,
  );
  const histories = {
    ours: [await countHistory(client, expectationWorkflowId(singleId)), routerShare.count],
    raw: await countHistory(client, `${runPrefix}-raw-before-0`),
  };
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
