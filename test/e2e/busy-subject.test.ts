/**
 * A busy subject on the real dev server (suggestContinueAsNew at 300 events, see global-setup): a few thousand
 * facts on one subject and one fact key, stored by signal as a feed's requests are, while expectations wait. The
 * routers continue as new and no fact, subscriber, dependent or deadline is lost; the expectations hear none of the
 * subject's facts (no fan-out), and read them from the routers when they decide.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Expectation, Fact } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord, recordFact, storeFacts, withdrawExpectation } from '../../src/temporal/expectations.js';
import { expectationWorkflowId, factRouterWorkflowId, subjectRouterWorkflowId } from '../../core/ids.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { untilRecord, untilTrue } from '../support/poll.js';
import { raiseOn, useWatcherWorker } from '../support/watcher.js';
import { deliveryExpectation } from '../support/fixtures.js';

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
  return deliveryExpectation(`busy-${name}-${suffix}`, new Date(Date.now() + dueInMs).toISOString(), {
    subject,
    expects: `step ${name}`,
    satisfiedBy: { factKey: `shipment:BUSY-${suffix}:${name}` },
    ...extra,
  });
}

async function raise(e: Expectation): Promise<void> {
  const origin = { taskId: `origin-${suffix}`, contextId: `ctx-${suffix}` };
  const { started } = await raiseOn(client, taskQueue, e, { id: 'shipping-agent', cardUrl: agent.cardUrl }, origin);
  expect(started).toBe('raised');
}

// Long: after 2,000 facts the worker may still be working through the routers' backlog, on a 2-core machine that runs
// the rest of the suite beside it.
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
 * Stores the facts as a feed's requests of 5 do, one request at a time, each fact stamped when it is sent: each request
 * is then a signal of its own to its routers, 400 events or more in each history for the 2,000 facts, past the server's
 * suggestion at 300. Four at a time, a bridge joins the requests that wait for one router into one signal, and on a
 * loaded machine (CI, 12-07) so many were joined that the key's router stayed under 300 events and rightly never
 * continued as new.
 */
async function report(facts: Fact[]): Promise<void> {
  for (let i = 0; i < facts.length; i += 5) {
    const batch = facts.slice(i, i + 5).map((fact) => ({ ...fact, receivedAt: new Date().toISOString() }));
    await storeFacts(client, taskQueue, batch, { factRetention: 'P7D' });
  }
}

/** How many events the current run of a workflow holds. */
const historyLength = async (workflowId: string): Promise<number> =>
  Number((await client.workflow.getHandle(workflowId).describe()).historyLength);

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
  // A minute ahead: the facts are stored by then, the routers' own backlog aside.
  const horizon = new Date(start + 55_000).toISOString();
  const notStalled = expectation('not-stalled', 30 * 86_400_000, { horizon });
  // Due while the subject is busy.
  const overdue = expectation('overdue', 60_000);
  const waiting = [satisfied, anchor, dependent, withdrawn, open, notStalled, overdue];
  for (const e of waiting) await raise(e);
  await until(dependent.expectationId, (r) => r.state === 'open');

  await report(scans.slice(0, -1));
  await report([lastScan]); // alone, so that it is the latest the router received
  await until(dependent.expectationId, (r) => r.state === 'open');

  // The routers of the key and of the subject continued as new; the expectations on the subject were told nothing. A
  // router continues as new in its next task, and the routers' tasks are paced: on a busy machine that task may come
  // after the last fact was stored.
  for (const router of [factRouterWorkflowId(busyKey, taskQueue), subjectRouterWorkflowId(subject, taskQueue)]) {
    await untilTrue(async () => (await runs(router)).continued, {
      timeoutMs: 60_000,
      describe: () => `${router} did not continue as new within 60 s of ${FACTS} facts`,
    });
  }
  for (const e of waiting) {
    expect(await historyLength(expectationWorkflowId(e.expectationId)), e.expectationId).toBeLessThan(40);
  }

  // Subscribers kept: the satisfying facts and the anchor's dependent still reach them.
  const anchorObservedAt = new Date().toISOString();
  await report([
    { factKey: satisfied.satisfiedBy.factKey, observedAt: lastScan.observedAt, source: 'carrier-feed' },
    { factKey: anchor.satisfiedBy.factKey, observedAt: anchorObservedAt, source: 'carrier-feed' },
  ]);
  expect(await withdrawExpectation(client, withdrawn.expectationId, { reason: 'cancelled' })).toBe('withdrawn');

  // Latest fact and dedupe keys kept by the key's router.
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
  expect(await getExpectationRecord(client, open.expectationId)).toMatchObject({ state: 'open', lapses: [] });

  // Deadlines kept: the overdue one lapsed once, on time, with the subject's latest fact read from its router.
  const overdueRecord = await until(overdue.expectationId, (r) => r.lapses[0]?.delivery.status === 'delivered');
  expect(overdueRecord.lapses).toHaveLength(1);
  expect(Date.parse(overdueRecord.lapse!.lapsedAt)).toBeGreaterThanOrEqual(Date.parse(overdue.dueAt));
  expect(Date.parse(overdueRecord.lapse!.lastFactAt!)).toBeGreaterThanOrEqual(Date.parse(lastScan.observedAt));
  // The horizon came 5 s before that due time: checked, and no stall, because facts on the subject arrived.
  const checked = await until(notStalled.expectationId, (r) => r.lastFactAt !== undefined);
  expect(checked).toMatchObject({ state: 'open', lapses: [] });
}, 480_000);
