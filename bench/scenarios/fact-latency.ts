/**
 * Scenario 2, fact to satisfied: from the fact's `POST /v1/facts?wait=true` to its answer saying the expectation is
 * `satisfied` (the expectation's own answer to the bridge's takeFact update; its query is polled back to back only
 * when the answer does not say so), against a raw signal → result round trip of a workflow that waits for one
 * signal, on the same server. Samples of ours and raw alternate one by one so that both see the same load.
 */
import { recordQuery } from '../../workflows/messages.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { goSignal } from '../baseline/workflows.js';
import { drainedAt } from '../lib/backlog.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, factKeyOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { progress, waitUntil } from '../lib/progress.js';
import type { Stack } from '../lib/stack.js';
import { ratio, summarise, type Summary } from '../lib/stats.js';

/** What `POST /v1/facts?wait=true` answers (only what the scenario reads). */
interface FactsAnswer {
  facts: Array<{ expectations?: Array<{ expectationId: string; state: string; satisfiedAt?: string }> }>;
}

export interface FactLatencyResult {
  samples: number;
  /** POST sent → record satisfied. */
  oursMs: Summary;
  /** POST sent → POST answered (the bridge, the router's update, the expectation's takeFact update). */
  postMs: Summary;
  /** Samples whose answer said satisfied (the rest were read by polling the query). */
  answeredSatisfied: number;
  /** POST sent → the workflow's own satisfiedAt (workflow clock: the task that applied the fact started). */
  decidedMs: Summary;
  /** Queries per sample until satisfied. */
  pollsPerSample: Summary;
  /** Signal sent → workflow result. */
  rawMs: Summary;
  /** Ours / raw signal → result. */
  ratios: { p50: number; p99: number };
}

export async function runFactLatency(stack: Stack, samples: number, concurrency: number): Promise<FactLatencyResult> {
  const prefix = `${runPrefix}-lat`;
  const batches = Math.ceil(samples / 10);
  progress(`fact to satisfied: raising ${batches * 10} expectations and starting ${samples} signal workflows`);
  const dueAt = monthsAhead();
  const raised = await runPool(batches, concurrency, (b) =>
    postJson(
      `${stack.bridgeUrl}/a2a/events`,
      stack.tokens.agent,
      artifactUpdate(batchOf(prefix, b, 10, dueAt), `${prefix}-task-${b}`),
    ),
  );
  if (raised.errors.length > 0) throw new Error(`fact to satisfied: raising failed: ${raised.errors[0]}`);
  stack.expectRaised(batchKeys(prefix, batches, 10));
  const started = await runPool(samples, concurrency, (i) =>
    stack.client.workflow.start('signalWorkflow', {
      workflowId: `${prefix}-raw-${i}`,
      taskQueue: stack.baselineQueue,
      args: [],
    }),
  );
  if (started.errors.length > 0) throw new Error(`fact to satisfied: raw starts failed: ${started.errors[0]}`);
  await stack.waitSettled();
  // Scenario 1 leaves the first tasks of its raises queued (the bridge answers once they are started, not run): a
  // fact's update or a query behind them would measure the backlog, not the fact.
  await drainedAt(stack.client, stack.server.namespace, stack.watcherQueue, { timeoutMs: 600_000, label: 'facts' });

  const ours: number[] = [];
  const post: number[] = [];
  const decided: number[] = [];
  const polls: number[] = [];
  const raw: number[] = [];
  let answeredSatisfied = 0;
  for (let i = 0; i < samples; i++) {
    const id = `${prefix}-${Math.floor(i / 10)}-${i % 10}`;
    const handle = stack.client.workflow.getHandle(expectationWorkflowId(id));
    // Ours too must be waiting (its first task done, its deadline timer started: 5 events) before the clock starts:
    // a query before then waits behind the worker's backlog of first tasks, and on the cluster timed out at 30 s.
    await waitUntil(
      'the expectation to wait on its deadline',
      async () => (await handle.describe()).historyLength >= 5,
      {
        timeoutMs: 300_000,
        intervalMs: 50,
      },
    );
    const wall0 = Date.now();
    const t0 = performance.now();
    const answer = await postJson<FactsAnswer>(`${stack.bridgeUrl}/v1/facts?wait=true`, stack.tokens.feed, {
      facts: [
        {
          factKey: factKeyOf(id),
          observedAt: new Date(wall0).toISOString(),
          subject: { type: 'shipment', id: `${prefix}-S${Math.floor(i / 10)}` },
        },
      ],
    });
    post.push(performance.now() - t0);
    const taken = answer.facts[0]?.expectations?.find((expectation) => expectation.expectationId === id);
    let queries = 0;
    let satisfiedAt = taken?.state === 'satisfied' ? taken.satisfiedAt : undefined;
    if (satisfiedAt) answeredSatisfied++;
    while (!satisfiedAt) {
      const record = await handle.query(recordQuery);
      queries++;
      if (record.state === 'satisfied') satisfiedAt = record.satisfiedAt;
    }
    ours.push(performance.now() - t0);
    decided.push(Date.parse(satisfiedAt) - wall0);
    polls.push(queries);

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
    postMs: summarise(post),
    answeredSatisfied,
    decidedMs: summarise(decided),
    pollsPerSample: summarise(polls, 0),
    rawMs,
    ratios: { p50: ratio(oursMs.p50, rawMs.p50), p99: ratio(oursMs.p99, rawMs.p99) },
  };
}
