/**
 * A busy subject on the real dev server (suggestContinueAsNew at 300 events, see global-setup): a few thousand
 * facts on one subject and one fact key while expectations wait. The ledgers and the expectations continue as
 * new, and no fact, subscriber, dependent or deadline is lost: every expectation ends in the right state.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Expectation, Fact } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord, recordFact, withdrawExpectation } from '../../src/temporal/expectations.js';
import { expectationWorkflowId, factRouterWorkflowId, subjectLedgerWorkflowId } from '../../core/ids.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { untilRecord } from '../support/poll.js';
import { raiseOn, useWatcherWorker } from '../support/watcher.js';

const FACTS = 2000;
const taskQueue = `busy-subject-${randomUUID()}`;
const { client } = useWatcherWorker(taskQueue);
let agent: TestAgent;

beforeAll(async () => {
  agent = await startTestAgent();
});

afterAll(async () => {
  await agent?.close();
});

const suffix = randomUUID().slice(0, 8);
const subject = { type: 'shipment', id: `BUSY-${suffix}` };
const busyKey = `shipment:BUSY-${suffix}:scanned`;

function expectation(name: string, dueInMs: number, extra: Partial<Expectation> = {}): Expectation {
  return {
    expectationId: `busy-${name}-${suffix}`,
    kind: 'delivery',
    subject,
    expects: `step ${name}`,
    satisfiedBy: { factKey: `shipment:BUSY-${suffix}:${name}` },
    dueAt: new Date(Date.now() + dueInMs).toISOString(),
    basis: 'contract',
    ...extra,
  };
}

async function raise(e: Expectation): Promise<void> {
  const origin = { taskId: `origin-${suffix}`, contextId: `ctx-${suffix}` };
  const { started } = await raiseOn(client, taskQueue, e, { id: 'shipping-agent', cardUrl: agent.cardUrl }, origin);
  expect(started).toBe('raised');
}

// Long: after 2,000 facts the worker may still be working through the subject ledger's forwards to every step, on a
// 2-core machine that runs the rest of the suite beside it.
const until = (id: string, accept: (record: ExpectationRecord) => boolean, timeoutMs = 150_000) =>
  untilRecord((recordId) => getExpectationRecord(client, recordId), id, accept, { timeoutMs });

/** The first run of a workflow chain, and whether the chain continued as new. */
async function runs(workflowId: string): Promise<{ continued: boolean; firstRunClosedAt?: Date }> {
  const description = await client.workflow.getHandle(workflowId).describe();
  const firstRunId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
  if (firstRunId === description.runId) return { continued: false };
  const first = await client.workflow.getHandle(workflowId, firstRunId).describe();
  return { continued: true, firstRunClosedAt: first.closeTime };
}

/**
 * Reports the facts 8 at a time: they share one key, so each is an update of one fact ledger, and Temporal refuses
 * more than 10 updates in flight on one workflow (a CI run on a busy machine met that at 16; through the bridge such
 * a burst is answered 503 with Retry-After, test/unit/temporal-call.test.ts).
 */
async function report(facts: Fact[], concurrency = 8): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < facts.length) {
        const fact = facts[next++]!;
        await recordFact(client, taskQueue, fact, { factRetention: 'P7D' });
      }
    }),
  );
}

it('keeps every fact, subscriber, dependent and deadline across continue-as-new', async () => {
  const start = Date.now();
  const base = Date.parse('2026-01-01T00:00:00Z');
  const scans: Fact[] = Array.from({ length: FACTS }, (_, i) => ({
    factKey: busyKey,
    observedAt: new Date(base + i * 1000).toISOString(),
    source: 'carrier-feed',
    subject,
  }));
  const lastScan = scans.at(-1)!;

  const satisfied = expectation('satisfied', 30 * 86_400_000);
  const anchor = expectation('anchor', 30 * 86_400_000);
  const dependent = expectation('dependent', 40 * 86_400_000, {
    anchor: { expectationId: anchor.expectationId, offset: 'P1D' },
  });
  const withdrawn = expectation('withdrawn', 30 * 86_400_000);
  const open = expectation('open', 30 * 86_400_000);
  // A minute ahead: the 2,000 facts must make it continue as new before that, which takes over 25 s on a busy
  // 2-core machine (the whole suite running beside it).
  const horizon = new Date(start + 55_000).toISOString();
  const notStalled = expectation('not-stalled', 30 * 86_400_000, { horizon });
  // Due while the subject is busy: its deadline must survive its own continue-as-new.
  const overdue = expectation('overdue', 60_000);
  const waiting = [satisfied, anchor, dependent, withdrawn, open, notStalled, overdue];
  for (const e of waiting) await raise(e);
  await until(dependent.expectationId, (r) => r.state === 'open');

  await report(scans.slice(0, -1));
  await report([lastScan]); // alone, so that it is the latest the ledger received

  // The fact ledger and the subject ledger continued as new, and so did the expectations on the subject.
  expect((await runs(factRouterWorkflowId(busyKey, taskQueue))).continued).toBe(true);
  expect((await runs(subjectLedgerWorkflowId(subject))).continued).toBe(true);
  for (const e of waiting) {
    expect((await runs(expectationWorkflowId(e.expectationId))).continued, e.expectationId).toBe(true);
  }

  // Subscribers kept: the satisfying facts and the anchor's dependent still reach them.
  const anchorObservedAt = new Date().toISOString();
  await report([
    { factKey: satisfied.satisfiedBy.factKey, observedAt: lastScan.observedAt, source: 'carrier-feed' },
    { factKey: anchor.satisfiedBy.factKey, observedAt: anchorObservedAt, source: 'carrier-feed' },
  ]);
  expect(await withdrawExpectation(client, withdrawn.expectationId, { reason: 'cancelled' })).toBe('withdrawn');

  // Latest fact and dedupe keys kept by the fact ledger.
  expect(await recordFact(client, taskQueue, lastScan, { factRetention: 'P7D' })).toBe('duplicate');
  const late = expectation('late-subscriber', 30 * 86_400_000, { satisfiedBy: { factKey: busyKey } });
  await raise(late);

  expect(await until(satisfied.expectationId, (r) => r.closedAt !== undefined)).toMatchObject({ state: 'satisfied' });
  expect(await until(anchor.expectationId, (r) => r.closedAt !== undefined)).toMatchObject({ state: 'satisfied' });
  expect(await until(dependent.expectationId, (r) => r.dueAt !== r.projectedDueAt)).toMatchObject({
    state: 'open',
    dueAt: new Date(Date.parse(anchorObservedAt) + 86_400_000).toISOString(),
  });
  expect(await until(withdrawn.expectationId, (r) => r.closedAt !== undefined)).toMatchObject({ state: 'withdrawn' });
  expect(await until(late.expectationId, (r) => r.closedAt !== undefined)).toMatchObject({
    state: 'satisfied',
    observedAt: lastScan.observedAt,
  });
  // The anchor's fact names no subject, but it satisfied an expectation on this one: it is the subject's latest fact.
  expect(await until(open.expectationId, (r) => r.lastFactAt === anchorObservedAt)).toMatchObject({
    state: 'open',
    lapses: [],
  });

  // Deadlines kept: the horizon passed with facts on the subject (no stall); the overdue one lapsed once, on time.
  const overdueRecord = await until(overdue.expectationId, (r) => r.lapses[0]?.delivery.status === 'delivered');
  expect(overdueRecord.lapses).toHaveLength(1);
  expect(Date.parse(overdueRecord.lapse!.lapsedAt)).toBeGreaterThanOrEqual(Date.parse(overdue.dueAt));
  const { firstRunClosedAt } = await runs(expectationWorkflowId(overdue.expectationId));
  expect(firstRunClosedAt!.getTime()).toBeLessThan(Date.parse(overdue.dueAt));
  // The horizon came 5 s before that due time: checked, and no stall, because facts on the subject arrived.
  expect(await getExpectationRecord(client, notStalled.expectationId)).toMatchObject({ state: 'open', lapses: [] });
}, 480_000);
