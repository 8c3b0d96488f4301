/**
 * The client operations the bridge calls, on the real dev server with the real worker: facts routed by key through
 * an update of their fact router, subject facts, duplicates, zero retention, records and withdrawal.
 * Every expectation here is due far ahead: nothing lapses.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Expectation, Fact } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import {
  getExpectationRecord,
  recordFact,
  startExpectation,
  storeFacts,
  withdrawExpectation,
} from '../../src/temporal/expectations.js';
import { FACT_ROUTER_SHARDS } from '../../core/fact-shards.js';
import { factRouterWorkflowId, subjectRouterWorkflowId } from '../../core/ids.js';
import type { FactBatch } from '../../workflows/messages.js';
import type { ExpectationInput } from '../../workflows/messages.js';
import { ExpectationState } from '../../workflows/search-attributes.js';
import { expectationInput, shipmentDelivery } from '../support/fixtures.js';
import { onQueues, unique } from '../support/ids.js';
import { untilRecord } from '../support/poll.js';
import { routerEventsOf } from '../support/routers.js';
import { useWatcherWorker } from '../support/watcher.js';

const taskQueue = `fact-routing-${randomUUID()}`;
const retention = { factRetention: 'P7D' };
const { client } = useWatcherWorker(taskQueue);

const DAY = 86_400_000;

function expectationOn(subjectId: string, extra: Partial<Expectation> = {}): Expectation {
  const id = unique('route');
  return shipmentDelivery(id, subjectId, new Date(Date.now() + 30 * DAY).toISOString(), {
    satisfiedBy: { factKey: `shipment:${id}:delivered` },
    ...extra,
  });
}

async function raise(expectation: Expectation): Promise<ExpectationInput> {
  const input = expectationInput(
    expectation,
    { id: 'shipping-agent' },
    { taskId: 'origin-task', contextId: 'ctx' },
    taskQueue,
  );
  expect(await startExpectation(client, taskQueue, input)).toBe('raised');
  return input;
}

function fact(factKey: string, extra: Partial<Fact> = {}): Fact {
  return { factKey, observedAt: new Date().toISOString(), source: 'carrier-feed', ...extra };
}

/** Polls the record until `accept` holds (10 s). */
const until = (id: string, accept: (record: ExpectationRecord) => boolean) =>
  untilRecord((recordId) => getExpectationRecord(client, recordId), id, accept, { timeoutMs: 10_000, intervalMs: 100 });

describe('recordFact', () => {
  it('satisfies the expectation waiting on the key, through the router', async () => {
    const { expectation } = await raise(expectationOn(unique('S')));
    await until(expectation.expectationId, (r) => r.state === 'open');

    expect(await recordFact(client, taskQueue, fact(expectation.satisfiedBy.factKey), retention)).toBe('recorded');

    const record = await until(expectation.expectationId, (r) => r.closedAt !== undefined);
    expect(record).toMatchObject({ state: 'satisfied', late: false, satisfiedBy: { source: 'carrier-feed' } });
  });

  it('starts no workflow for facts nobody waits on, once their routers run: one update each', async () => {
    const keys = (round: string, n: number) =>
      Array.from({ length: n }, (_, i) => `shipment:${unique(round)}-${i}:scanned`);
    const count = async () => (await client.workflow.count(onQueues(taskQueue))).count;
    // Visibility lags the starts a little: the count once two readings half a second apart agree.
    const workflows = async () => {
      for (let last = await count(); ;) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const now = await count();
        if (now === last) return now;
        last = now;
      }
    };
    const first = keys('first', 200);
    for (const key of first) expect(await recordFact(client, taskQueue, fact(key), retention)).toBe('recorded');
    // Keys whose routers the first round started (a router starts once, with the first fact it is sent, ever).
    const running = new Set(first.map((key) => factRouterWorkflowId(key, taskQueue)));
    const second = keys('second', 400)
      .filter((key) => running.has(factRouterWorkflowId(key, taskQueue)))
      .slice(0, 100);
    const before = await workflows();

    for (const key of second) expect(await recordFact(client, taskQueue, fact(key), retention)).toBe('recorded');
    const after = await workflows();

    expect(second).toHaveLength(100);
    expect(running.size).toBeLessThanOrEqual(FACT_ROUTER_SHARDS);
    expect(after).toBe(before);
    // Each was one update of its router: its history holds it.
    expect(await routerEventsOf(client, taskQueue, second[0]!)).toContain(
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
    );
  });

  it('keeps an early fact for an expectation raised later', async () => {
    const expectation = expectationOn(unique('S'));
    const early = fact(expectation.satisfiedBy.factKey);

    expect(await recordFact(client, taskQueue, early, retention)).toBe('recorded');
    expect(await recordFact(client, taskQueue, early, retention)).toBe('duplicate');
    await raise(expectation);

    const record = await until(expectation.expectationId, (r) => r.closedAt !== undefined);
    expect(record).toMatchObject({ state: 'satisfied', observedAt: early.observedAt });
  });

  it('with a zero retention, keeps nothing for a key nobody waits on, and forwards to those that wait', async () => {
    const expectation = expectationOn(unique('S'));
    const zero = { factRetention: 'PT0S' };
    const unkept = fact(expectation.satisfiedBy.factKey, { observedAt: new Date(Date.now() - 60_000).toISOString() });
    const awaited = fact(expectation.satisfiedBy.factKey, { source: 'other' });

    expect(await recordFact(client, taskQueue, unkept, zero)).toBe('recorded');
    await raise(expectation);
    expect(await recordFact(client, taskQueue, awaited, zero)).toBe('recorded');

    // Satisfied by the fact sent after the raise: the one before it was not kept for it.
    expect(await until(expectation.expectationId, (r) => r.closedAt !== undefined)).toMatchObject({
      state: 'satisfied',
      observedAt: awaited.observedAt,
    });
  });

  it("stores a fact with a subject in its subject's router of this task queue, one signal, no workflow of its own", async () => {
    const subject = { type: 'shipment', id: unique('S') };
    const scan = { ...fact(unique('scan'), { subject }), receivedAt: new Date().toISOString() };
    await storeFacts(client, taskQueue, [scan], { factRetention: 'PT0S' });

    const router = subjectRouterWorkflowId(subject, taskQueue);
    const { events } = await client.workflow.getHandle(router).fetchHistory();
    const stored = (events ?? []).flatMap((event) => {
      const signaled = event.workflowExecutionSignaledEventAttributes;
      const data = signaled?.signalName === 'facts' ? signaled.input?.payloads?.[0]?.data : undefined;
      return data ? ((JSON.parse(Buffer.from(data).toString('utf8')) as FactBatch).subjects ?? []) : [];
    });
    expect(stored).toContainEqual({
      subject,
      factKey: scan.factKey,
      observedAt: scan.observedAt,
      receivedAt: scan.receivedAt,
    });
    expect(router.startsWith(`facts:${taskQueue}:`)).toBe(true);
  });
});

describe('startExpectation, getExpectationRecord, withdrawExpectation', () => {
  it('answers exists for an id already used, running or closed', async () => {
    const input = await raise(expectationOn(unique('S')));
    expect(await startExpectation(client, taskQueue, input)).toBe('exists');

    await recordFact(client, taskQueue, fact(input.expectation.satisfiedBy.factKey), retention);
    await until(input.expectation.expectationId, (r) => r.closedAt !== undefined);
    await client.workflow.getHandle(input.links.self).result();

    expect(await startExpectation(client, taskQueue, input)).toBe('exists');
  });

  it('reads the record of a running, a closed and an unknown expectation', async () => {
    const { expectation, links } = await raise(expectationOn(unique('S')));

    const open = await until(expectation.expectationId, (r) => r.state === 'open');
    expect(open.expectation).toEqual(expectation);
    expect(await withdrawExpectation(client, expectation.expectationId, { reason: 'cancelled' })).toBe('withdrawn');
    const closed = await client.workflow.getHandle(links.self).result();

    expect(await getExpectationRecord(client, expectation.expectationId)).toEqual(closed);
    expect(closed).toMatchObject({ state: 'withdrawn', withdrawnReason: 'cancelled' });
    expect(await getExpectationRecord(client, unique('unknown'))).toBeUndefined();
    expect(await withdrawExpectation(client, expectation.expectationId, { reason: 'again' })).toBe('not-open');
  });

  it('sets all six search attributes at start and upserts the state', async () => {
    const { expectation, links } = await raise(expectationOn(unique('S')));
    await withdrawExpectation(client, expectation.expectationId, { reason: 'cancelled' });
    await client.workflow.getHandle(links.self).result();

    const attributes = (await client.workflow.getHandle(links.self).describe()).typedSearchAttributes;

    expect(attributes.get(ExpectationState)).toBe('withdrawn');
    const ours = attributes.getAll().filter((pair) => pair.key.name.startsWith('Expectation'));
    expect(ours.map((pair) => pair.key.name).sort()).toEqual([
      'ExpectationAgent',
      'ExpectationDueAt',
      'ExpectationFactKey',
      'ExpectationKind',
      'ExpectationState',
      'ExpectationSubject',
    ]);
  });
});
