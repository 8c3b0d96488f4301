/**
 * Fact routers on the time-skipping server: early facts within and beyond retention, re-delivery, fan-out to every
 * subscriber, a zero retention, the bound on early facts, and what a satisfied expectation tells its routers.
 */
import { describe, expect, it } from 'vitest';
import { awaitFactTaken, recordFactRouted } from '../../src/temporal/expectations.js';
import { expectationWorkflowId, factRouterWorkflowId, routerTaskQueue } from '../../core/ids.js';
import { shardOf } from '../../core/fact-shards.js';
import { MAX_RETAINED_FACTS_PER_ROUTER, ROUTER_WORKFLOW_TASK_TIMEOUT_MS } from '../../core/limits.js';
import { CLIENT_FORWARDS_FROM, type factRouterWorkflow } from '../../workflows/fact-router.js';
import { FORWARD_DEFERRAL_MS } from '../../workflows/fact-router-state.js';
import { keyLoadQuery, recordFactUpdate, type RoutedKey } from '../../workflows/messages.js';
import { defaultSettings, shipmentExpectation } from '../support/fixtures.js';
import { routerForwards } from '../support/routers.js';
import { DAY, HOUR, onAnUnstartedRouter, reportFact, storeFact, useHarness } from './support.js';

const h = useHarness();

describe('early facts', () => {
  it('satisfy at once an expectation raised within the retention (P7D) after the fact', async () => {
    const start = await h.now();
    const id = h.id('early');
    const expectation = shipmentExpectation(id, start, 10 * DAY);
    expect(await reportFact(h, expectation.satisfiedBy.factKey, start - HOUR)).toBe('recorded');

    await h.advanceTo(start + 6 * DAY);
    await h.raise(expectation);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'satisfied', late: false, observedAt: new Date(start - HOUR).toISOString() });
    expect(Date.parse(record.satisfiedAt!)).toBeLessThan(start + 6 * DAY + 60_000);
  });

  it('satisfy, without a lapse, an expectation whose due time had already passed when it was raised', async () => {
    const start = await h.now();
    const id = h.id('early-past-due');
    const expectation = shipmentExpectation(id, start, -DAY);
    await reportFact(h, expectation.satisfiedBy.factKey, start - 2 * DAY);

    // The deadline is decided a settle interval after the raise, by when the router has sent its retained fact on.
    await h.raise(expectation, { settings: { ...defaultSettings, settle: 'PT30S' } });
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'satisfied', late: false, lapses: [] });
  });

  it('do not satisfy an expectation raised after the retention has passed', async () => {
    const start = await h.now();
    const id = h.id('too-early');
    const expectation = shipmentExpectation(id, start, 30 * DAY);
    await reportFact(h, expectation.satisfiedBy.factKey, start);
    await h.advanceTo(start + 7 * DAY + HOUR);

    await h.raise(expectation);
    await h.until(id, (r) => r.state === 'open');
    await h.advanceTo(start + 8 * DAY);

    expect((await h.record(id)).state).toBe('open');
  });

  it('are not kept with a zero retention', async () => {
    const start = await h.now();
    const id = h.id('zero');
    const expectation = shipmentExpectation(id, start, 30 * DAY);

    expect(await reportFact(h, expectation.satisfiedBy.factKey, start, {}, 'PT0S')).toBe('recorded');
    await h.raise(expectation);
    await h.until(id, (r) => r.state === 'open');
    await h.advanceTo(start + DAY);

    expect((await h.record(id)).state).toBe('open');
  });

  it(`are kept for the ${MAX_RETAINED_FACTS_PER_ROUTER} keys a router heard last, the oldest forgotten first`, async () => {
    const start = await h.now();
    const prefix = await onAnUnstartedRouter(
      h,
      () => h.id('bound'),
      (made) => `shipment/${made}-0/delivered`,
    );
    const factKey = (i: number) => `shipment/${prefix}-${i}/delivered`;
    // A router of one shard that retains MAX_RETAINED_FACTS_PER_ROUTER keys (as one that continued as new carries them).
    const shard = shardOf(factKey(0));
    const keys: string[] = [];
    for (let i = 0; keys.length < MAX_RETAINED_FACTS_PER_ROUTER + 1; i++)
      if (shardOf(factKey(i)) === shard) keys.push(factKey(i));
    const retained = (key: string, at: number): RoutedKey => ({
      factKey: key,
      subscribers: [],
      latest: { factKey: key, observedAt: new Date(at).toISOString(), source: 'feed' },
      lastReceivedAt: new Date(at).toISOString(),
      seen: [`${new Date(at).toISOString()}|feed`],
    });
    const carried = keys.slice(0, MAX_RETAINED_FACTS_PER_ROUTER).map((key, i) => retained(key, start - HOUR + i));
    await h.client.workflow.start<typeof factRouterWorkflow>('factRouterWorkflow', {
      workflowId: factRouterWorkflowId(keys[0]!, h.taskQueue),
      taskQueue: h.taskQueue,
      args: [{ shard, retention: 'P7D', carried: { keys: carried } }],
    });

    // One more key heard (past the bound by a tenth, the router forgets the oldest down to the bound).
    // Distinct keys of the shard, taken in order from one counter (two searches must never find the same key).
    let n = 1_000_000;
    for (let i = 0; i < MAX_RETAINED_FACTS_PER_ROUTER / 10 + 1; i++) {
      while (shardOf(factKey(n)) !== shard) n++;
      await reportFact(h, factKey(n++), start);
    }
    const [oldest, newest] = [h.id('oldest'), h.id('newest')];
    await h.raise(shipmentExpectation(oldest, start, 10 * DAY, { satisfiedBy: { factKey: keys[0]! } }));
    await h.raise(
      shipmentExpectation(newest, start, 10 * DAY, {
        satisfiedBy: { factKey: keys[MAX_RETAINED_FACTS_PER_ROUTER - 1]! },
      }),
    );
    const satisfied = await h.until(newest, (r) => r.closedAt !== undefined);
    await h.advanceTo(start + DAY);

    expect(satisfied.state).toBe('satisfied');
    expect((await h.record(oldest)).state).toBe('open');
  });
});

describe('a fact router', () => {
  it('answers duplicate for the same (observedAt, source) and records another source', async () => {
    const start = await h.now();
    const key = `shipment/${h.id('S')}/delivered`;

    expect(await reportFact(h, key, start)).toBe('recorded');
    expect(await reportFact(h, key, start)).toBe('duplicate');
    const sameInstantInMicroseconds = new Date(start).toISOString().replace('Z', '000Z');
    expect(await reportFact(h, key, start, { observedAt: sameInstantInMicroseconds })).toBe('duplicate');
    expect(await reportFact(h, key, start, { source: 'another-feed' })).toBe('recorded');
  });

  it('answers a re-delivery with when the observation was first received, when asked', async () => {
    const start = await h.now();
    const key = `shipment/${h.id('S')}/delivered`;
    const fact = { factKey: key, observedAt: new Date(start).toISOString(), source: 'carrier-feed' };
    const router = h.client.workflow.getHandle<typeof factRouterWorkflow>(factRouterWorkflowId(key, h.taskQueue));
    await reportFact(h, key, start, { receivedAt: new Date(start + 1_000).toISOString() });

    const answer = await router.executeUpdate(recordFactUpdate, {
      args: [{ ...fact, receivedAt: new Date(start + 9_000).toISOString() }, { tellFirstReceipt: true }],
    });

    expect(answer).toEqual({ result: 'duplicate', firstReceivedAt: new Date(start + 1_000).toISOString() });
  });

  it('forwards a fact to every expectation waiting on its key, with a zero retention too', async () => {
    const start = await h.now();
    const key = `shipment/${h.id('S')}/delivered`;
    const ids = [h.id('one'), h.id('two')];
    for (const id of ids) await h.raise(shipmentExpectation(id, start, 10 * DAY, { satisfiedBy: { factKey: key } }));
    await Promise.all(ids.map((id) => h.until(id, (r) => r.state === 'open')));

    await reportFact(h, key, start, {}, 'PT0S');
    const records = await Promise.all(ids.map((id) => h.until(id, (r) => r.closedAt !== undefined)));

    expect(records.map((r) => r.state)).toEqual(['satisfied', 'satisfied']);
  });

  it(`forwards to ${CLIENT_FORWARDS_FROM} or more waiting on one key in one local activity, not a signal of its own to each`, async () => {
    const start = await h.now();
    const key = `shipment/${h.id('S')}/delivered`;
    const ids = Array.from({ length: CLIENT_FORWARDS_FROM + 2 }, (_, i) => h.id(`many-${i}`));
    for (const id of ids) await h.raise(shipmentExpectation(id, start, 10 * DAY, { satisfiedBy: { factKey: key } }));

    await reportFact(h, key, start);
    const records = await Promise.all(ids.map((id) => h.until(id, (r) => r.closedAt !== undefined)));
    const router = factRouterWorkflowId(key, h.taskQueue);
    // The router serves other tests' keys too: only the forwards to these expectations are this test's.
    const ours = new Set(ids.map(expectationWorkflowId));
    const { events } = await h.client.workflow.getHandle(router).fetchHistory();
    const signalled = events!.filter((event) =>
      ours.has(event.signalExternalWorkflowExecutionInitiatedEventAttributes?.workflowExecution?.workflowId ?? ''),
    );

    expect(records.map((r) => r.state)).toEqual(ids.map(() => 'satisfied'));
    expect((await routerForwards(h.client, router)).filter((id) => ours.has(id)).sort()).toEqual([...ours].sort());
    expect(signalled).toEqual([]);
  });

  it('tells the bridge, when it asks, whether an expectation waited on the fact; a caller that does not ask is not told', async () => {
    const start = await h.now();
    const id = h.id('awaited');
    const expectation = shipmentExpectation(id, start, 10 * DAY);
    const fact = (key: string, at: number) => ({
      factKey: key,
      observedAt: new Date(at).toISOString(),
      source: 'feed',
    });
    const record = (key: string, at: number, retention = 'P7D') =>
      recordFactRouted(h.client, h.taskQueue, fact(key, at), { factRetention: retention });
    const unexpected = `shipment/${h.id('S')}/unexpected`;

    const early = await record(unexpected, start);
    const again = await record(unexpected, start);
    const untold = await h.client.workflow
      .getHandle(factRouterWorkflowId(unexpected, h.taskQueue))
      .executeUpdate(recordFactUpdate, { args: [fact(unexpected, start + 1)] });
    const zero = await record(`shipment/${h.id('S')}/nobody`, start, 'PT0S');
    await h.raise(expectation);
    await h.until(id, (r) => r.state === 'open');
    const awaited = await record(expectation.satisfiedBy.factKey, start);

    expect([early, again, zero, awaited]).toEqual([
      { result: 'recorded', awaited: false },
      { result: 'duplicate', awaited: true },
      { result: 'recorded', awaited: false },
      { result: 'recorded', awaited: true },
    ]);
    expect(untold).toBe('recorded');
  });

  it('started by a recorded fact, runs on the routers’ queue with their task timeout, as one started by a stored fact', async () => {
    const start = await h.now();
    const newKey = () => `shipment/${h.id('S')}/delivered`;
    const fact = (factKey: string) => ({ factKey, observedAt: new Date(start).toISOString(), source: 'feed' });
    // Each key is chosen once the router before it has started, so the two never share a router (nor its start).
    const recorded = await onAnUnstartedRouter(h, newKey, (k) => k);
    await recordFactRouted(h.client, h.taskQueue, fact(recorded), { factRetention: 'P7D' }, { listForwarded: true });
    const stored = await onAnUnstartedRouter(h, newKey, (k) => k);
    await storeFact(h, stored, start);

    for (const key of [recorded, stored]) {
      const described = await h.client.workflow.getHandle(factRouterWorkflowId(key, h.taskQueue)).describe();
      expect(described.taskQueue).toBe(routerTaskQueue(h.taskQueue));
      expect(Number(described.raw.executionConfig?.defaultWorkflowTaskTimeout?.seconds)).toBe(
        ROUTER_WORKFLOW_TASK_TIMEOUT_MS / 1000,
      );
    }
  });

  it('names the expectations it forwards to when asked, and holds its own signal back for a caller that delivers the fact itself', async () => {
    const start = await h.now();
    const key = `shipment/${h.id('S')}/delivered`;
    const [taker, left] = [h.id('taker'), h.id('left')];
    for (const id of [taker, left])
      await h.raise(shipmentExpectation(id, start, 10 * DAY, { satisfiedBy: { factKey: key } }));
    const fact = { factKey: key, observedAt: new Date(start).toISOString(), source: 'feed' };

    const answer = await recordFactRouted(
      h.client,
      h.taskQueue,
      fact,
      { factRetention: 'P7D' },
      { listForwarded: true },
    );
    // The caller delivers to one of them (as the bridge does with wait=true) and, say, dies before the other.
    const [taken] = await awaitFactTaken(h.client, [expectationWorkflowId(taker)], fact, Date.now() + 10_000);
    await h.until(taker, (r) => r.closedAt !== undefined);
    const leftBefore = await h.record(left);
    await h.advanceTo(start + FORWARD_DEFERRAL_MS + 1_000);
    const leftAfter = await h.until(left, (r) => r.state === 'satisfied');
    // The router serves other tests' keys too: only the forwards to these two are this test's.
    const ours = new Set([taker, left].map(expectationWorkflowId));
    const forwarded = (await routerForwards(h.client, factRouterWorkflowId(key, h.taskQueue))).filter((id) =>
      ours.has(id),
    );

    expect(answer).toEqual({
      result: 'recorded',
      awaited: true,
      forwardedTo: [taker, left].map(expectationWorkflowId),
    });
    expect(taken).toMatchObject({ expectationId: taker, agentId: 'shipping-agent', state: 'satisfied', late: false });
    expect(leftBefore.state).toBe('open');
    expect(Date.parse(leftAfter.satisfiedAt!)).toBeGreaterThanOrEqual(start + FORWARD_DEFERRAL_MS);
    expect(forwarded).toEqual([expectationWorkflowId(left)]);
  });
});

describe('a satisfied expectation and its routers', () => {
  /** The signals one workflow sent, by target workflow id and signal name. */
  async function signalsSent(workflowId: string): Promise<Array<{ to: string; name: string }>> {
    const { events } = await h.client.workflow.getHandle(workflowId).fetchHistory();
    return (events ?? []).flatMap((event) => {
      const sent = event.signalExternalWorkflowExecutionInitiatedEventAttributes;
      return sent ? [{ to: sent.workflowExecution?.workflowId ?? '', name: sent.signalName ?? '' }] : [];
    });
  }

  it('is dropped by its router once the router sent it the fact, so it sends no unsubscribe', async () => {
    const start = await h.now();
    const id = h.id('router-drops');
    const { expectation, links } = await h.raise(shipmentExpectation(id, start, 10 * DAY));
    await reportFact(h, expectation.satisfiedBy.factKey, start, { subject: expectation.subject });
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'satisfied', lastFactAt: new Date(start).toISOString() });
    expect(await signalsSent(links.self)).toEqual([]);
    const load = await h.client.workflow
      .getHandle(links.factRouter)
      .query(keyLoadQuery, expectation.satisfiedBy.factKey);
    expect(load.subscribers).toBe(0);
  });

  it('is dropped by its router when an early fact the router held satisfies it, so it sends no unsubscribe', async () => {
    const start = await h.now();
    const subject = { type: 'shipment', id: h.id('S') };
    const factKey = `shipment/${subject.id}/delivered`;
    await reportFact(h, factKey, start, { subject });
    const id = h.id('early');
    const { links } = await h.raise(shipmentExpectation(id, start, 10 * DAY, { subject, satisfiedBy: { factKey } }));

    expect(await h.until(id, (r) => r.closedAt !== undefined)).toMatchObject({ state: 'satisfied' });
    expect(await signalsSent(links.self)).toEqual([]);
  });

  it('starts one timer for a deadline that does not move, and closes without cancelling it', async () => {
    const start = await h.now();
    const id = h.id('one-timer');
    const { expectation, links } = await h.raise(shipmentExpectation(id, start, 10 * DAY));
    // A fact of another kind on the subject is stored by its router, and tells the expectation nothing.
    await reportFact(h, `shipment/${expectation.subject.id}/scanned`, start - HOUR, { subject: expectation.subject });
    await reportFact(h, expectation.satisfiedBy.factKey, start, { subject: expectation.subject });
    await h.until(id, (r) => r.closedAt !== undefined);

    const { events } = await h.client.workflow.getHandle(links.self).fetchHistory();
    const count = (has: (e: NonNullable<typeof events>[number]) => unknown) => (events ?? []).filter(has).length;
    // The memo moved once (satisfied); the timer stayed; no signal came but the router's forward.
    expect([
      count((e) => e.timerStartedEventAttributes),
      count((e) => e.timerCanceledEventAttributes),
      count((e) => e.workflowPropertiesModifiedEventAttributes),
      count((e) => e.workflowExecutionSignaledEventAttributes),
    ]).toEqual([1, 0, 1, 1]);
  });

  it('takes the fact that satisfies it as its lastFactAt when the fact names no subject', async () => {
    const start = await h.now();
    const id = h.id('no-subject');
    const { expectation } = await h.raise(shipmentExpectation(id, start, 10 * DAY));
    await reportFact(h, expectation.satisfiedBy.factKey, start - HOUR);

    expect(await h.until(id, (r) => r.closedAt !== undefined)).toMatchObject({
      state: 'satisfied',
      lastFactAt: new Date(start - HOUR).toISOString(),
    });
  });
});

describe('a fact that satisfies one expectation and names no subject', () => {
  it('is a fact on that expectation’s subject for the others there too: a sibling’s horizon does not lapse stalled', async () => {
    const start = await h.now();
    const subject = { type: 'shipment', id: h.id('S') };
    const a = await h.raise(shipmentExpectation(h.id('satisfied'), start, 10 * DAY, { subject }));
    const b = h.id('sibling');
    await h.raise(shipmentExpectation(b, start, 10 * DAY, { subject, horizon: new Date(start + HOUR).toISOString() }));

    await reportFact(h, a.expectation.satisfiedBy.factKey, start, {
      receivedAt: new Date(start + 60_000).toISOString(),
    });
    await h.until(a.expectation.expectationId, (r) => r.closedAt !== undefined);
    await h.advanceTo(start + 2 * HOUR);

    // Read from its subject's router at the horizon: heard, so no stall, and the fact is its lastFactAt.
    expect((await h.until(b, (r) => r.lastFactAt !== undefined)).lastFactAt).toBe(new Date(start).toISOString());
    expect((await h.record(b)).lapses).toEqual([]);
  });
});
