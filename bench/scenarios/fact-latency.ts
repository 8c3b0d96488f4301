/**
 * Scenario 2, fact to satisfied (BENCHMARKS.md, "What is measured"): `POST /v1/facts?wait=true` until its answer says
 * `satisfied` (the record queried only when it does not), against a raw signal → result; samples alternate one by one.
 */
import { recordQuery } from '../../workflows/messages.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { goSignal } from '../baseline/workflows.js';
import { drainedAt } from '../lib/backlog.js';
import { postJson, runPool } from '../lib/load.js';
import { batchKeys, factKeyOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { progress, waitUntil } from '../lib/progress.js';
import type { Stack } from '../lib/stack.js';
import { ratio, summarise } from '../lib/stats.js';

/** What `POST /v1/facts?wait=true` answers (only what the scenario reads). */
interface FactsAnswer {
  facts: Array<{ expectations?: Array<{ expectationId: string; state: string; satisfiedAt?: string }> }>;
}

export type FactLatencyResult = Awaited<ReturnType<typeof runFactLatency>>;

/**
 * POST sent → satisfied (ours), → the workflow's own satisfiedAt (decided: the workflow clock), and raw signal sent →
 * result, in ms.
 */
export async function runFactLatency(stack: Stack, samples: number, concurrency: number) {
  const prefix = `${runPrefix}-lat`;
  const batches = Math.ceil(samples / 10);
  progress(`fact to satisfied: raising ${batches * 10} expectations and starting ${samples} signal workflows`);
  const dueAt = monthsAhead();
  const raised = await runPool(batches, concurrency, (b) => stack.raiseBatch(prefix, b, 10, dueAt));
  if (raised.errors.length > 0) throw new Error(`fact to satisfied: raising failed: ${raised.errors[0]}`);
  stack.expectRaised(batchKeys(prefix, batches, 10));
  const start = (i: number) =>
    stack.client.workflow.start('signalWorkflow', { workflowId: `${prefix}-raw-${i}`, taskQueue: stack.baselineQueue });
  const started = await runPool(samples, concurrency, start);
  if (started.errors.length > 0) throw new Error(`fact to satisfied: raw starts failed: ${started.errors[0]}`);
  await stack.waitSettled();
  // Scenario 1 leaves the first tasks of its raises queued (the bridge answers once they are started, not run): a
  // fact's update or a query behind them would measure the backlog, not the fact.
  await drainedAt(stack.client, stack.server.namespace, stack.watcherQueue, { timeoutMs: 600_000, label: 'facts' });

  const ours: number[] = [];
  const decided: number[] = [];
  const raw: number[] = [];
  for (let i = 0; i < samples; i++) {
    const id = `${prefix}-${Math.floor(i / 10)}-${i % 10}`;
    const handle = stack.client.workflow.getHandle(expectationWorkflowId(id));
    // Ours too must be waiting (its first task done, its deadline timer started: 5 events) before the clock starts:
    // a query before then waits behind the worker's backlog of first tasks, and on the cluster timed out at 30 s.
    const waiting = async () => (await handle.describe()).historyLength >= 5;
    await waitUntil('the expectation to wait on its deadline', waiting, { timeoutMs: 300_000, intervalMs: 50 });
    const subject = { type: 'shipment', id: `${prefix}-S${Math.floor(i / 10)}` };
    const wall0 = Date.now();
    const t0 = performance.now();
    const facts = [{ factKey: factKeyOf(id), observedAt: new Date(wall0).toISOString(), subject }];
    const answer = await postJson<FactsAnswer>(`${stack.bridgeUrl}/v1/facts?wait=true`, stack.tokens.feed, { facts });
    const taken = answer.facts[0]?.expectations?.find((expectation) => expectation.expectationId === id);
    let satisfiedAt = taken?.state === 'satisfied' ? taken.satisfiedAt : undefined;
    while (!satisfiedAt) {
      const record = await handle.query(recordQuery);
      if (record.state === 'satisfied') satisfiedAt = record.satisfiedAt;
    }
    ours.push(performance.now() - t0);
    decided.push(Date.parse(satisfiedAt) - wall0);

    const rawHandle = stack.client.workflow.getHandle(`${prefix}-raw-${i}`);
    // The raw workflow must be waiting (its first task done) before the clock starts.
    await waitUntil('the signal workflow to wait', async () => (await rawHandle.describe()).historyLength >= 4, {
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    const r0 = performance.now();
    await rawHandle.signal(goSignal);
    await rawHandle.result();
    raw.push(performance.now() - r0);
    if ((i + 1) % 50 === 0) progress(`  fact to satisfied: ${i + 1}/${samples} samples`);
  }
  const oursMs = summarise(ours);
  const rawMs = summarise(raw);
  progress(
    `  fact to satisfied: p50 ${oursMs.p50} / p99 ${oursMs.p99} ms; raw signal→result p50 ${rawMs.p50} / p99 ${rawMs.p99} ms`,
  );
  return {
    samples,
    oursMs,
    decidedMs: summarise(decided),
    rawMs,
    ratios: { p50: ratio(oursMs.p50, rawMs.p50), p99: ratio(oursMs.p99, rawMs.p99) },
  };
}
