/**
 * The workflows' own bounds (core/limits.ts) on the time-skipping server, each hit exactly and by one more: a fact
 * key's and a subject router's subscribers, an anchor's dependents, and a fact key's dedupe window. At the bound
 * the newcomer is served; past it, it is withdrawn with a reason that names the bound, and the state does not grow.
 */
import { describe, expect, it } from 'vitest';
import { DEDUPE_WINDOW, MAX_DEPENDENTS, MAX_KEY_SUBSCRIBERS, MAX_ROUTER_CARRIED_BYTES } from '../../core/limits.js';
import type { Fact } from '../../core/schemas/extension.js';
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { shardOf } from '../../core/fact-shards.js';
import type { factRouterWorkflow } from '../../workflows/fact-router.js';
import { DEDUPE_WINDOW_UNAWAITED } from '../../workflows/fact-router-state.js';
import {
  dependentsQuery,
  keyLoadQuery,
  recordFactUpdate,
  registerDependentSignal,
  subscribeSignal,
  type FactRouterInput,
  type KeyLoad,
} from '../../workflows/messages.js';
import { shipmentExpectation } from '../support/fixtures.js';
import { DAY, HOUR, onAnUnstartedRouter, reportFact, untilStatus, useHarness } from './support.js';

const h = useHarness();

/** Workflow ids of expectations that do not exist: places taken in a router (a fact sent to one drops it). */
const placeholders = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) => expectationWorkflowId(`${prefix}-${i}`));

/** Starts the fact router of `factKey` with `subscribers` waiting on it (as the bridge subscribes a request's raises). */
async function startFactRouter(factKey: string, subscribers: string[]): Promise<string> {
  const workflowId = factRouterWorkflowId(factKey, h.taskQueue);
  await h.client.workflow.start<typeof factRouterWorkflow>('factRouterWorkflow', {
    workflowId,
    taskQueue: h.taskQueue,
    args: [{ shard: shardOf(factKey), retention: 'P7D' }],
  });
  await h.client.workflow
    .getHandle(workflowId)
    .signal(subscribeSignal, { workflowIds: subscribers, factKeys: subscribers.map(() => factKey) });
  return workflowId;
}

const keyLoadOf = (factKey: string): Promise<KeyLoad> =>
  h.client.workflow.getHandle(factRouterWorkflowId(factKey, h.taskQueue)).query(keyLoadQuery, factKey);

describe('a fact key in its router', () => {
  it(`serves its ${MAX_KEY_SUBSCRIBERS}th subscriber`, async () => {
    const start = await h.now();
    const e = await onAnUnstartedRouter(
      h,
      () => shipmentExpectation(h.id('fact-last-place'), start, 10 * DAY),
      (made) => made.satisfiedBy.factKey,
    );
    const id = e.expectationId;
    await startFactRouter(e.satisfiedBy.factKey, placeholders(MAX_KEY_SUBSCRIBERS - 1, id));

    await h.raise(e);
    const load = await keyLoadOf(e.satisfiedBy.factKey);
    await reportFact(h, e.satisfiedBy.factKey, start);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(load).toMatchObject({ subscribers: MAX_KEY_SUBSCRIBERS, bound: MAX_KEY_SUBSCRIBERS });
    expect(record.state).toBe('satisfied');
  });

  it('withdraws one more, naming the bound, and stays at the bound', async () => {
    const start = await h.now();
    const e = await onAnUnstartedRouter(
      h,
      () => shipmentExpectation(h.id('fact-no-place'), start, 10 * DAY),
      (made) => made.satisfiedBy.factKey,
    );
    const id = e.expectationId;
    await startFactRouter(e.satisfiedBy.factKey, placeholders(MAX_KEY_SUBSCRIBERS, id));

    await h.raise(e);
    const record = await h.until(id, (r) => r.state === 'withdrawn');

    expect(record.withdrawnReason).toBe(
      `not registered: ${JSON.stringify(e.satisfiedBy.factKey)} already has ${MAX_KEY_SUBSCRIBERS} expectations ` +
        `waiting on it, its bound; withdrawn, as no fact would reach it`,
    );
    expect((await keyLoadOf(e.satisfiedBy.factKey)).subscribers).toBe(MAX_KEY_SUBSCRIBERS);
  });

  it(`remembers the last ${DEDUPE_WINDOW} observations for dedupe, and no more`, async () => {
    const start = await h.now();
    const factKey = await onAnUnstartedRouter(
      h,
      () => `shipment/${h.id('S')}/scanned`,
      (key) => key,
    );
    const observedAt = (i: number) => new Date(start - DAY + i * 1000).toISOString();
    const fact = (i: number): Fact => ({ factKey, observedAt: observedAt(i), source: 'carrier-feed' });
    // A key waited on, whose router has seen facts 1 to DEDUPE_WINDOW (as one that continued as new carries them).
    // A router never closes and buffers a signal it has no handler for, so one stands in for an expectation.
    const waiting = h.id('stand-in');
    await h.client.workflow.start<typeof factRouterWorkflow>('factRouterWorkflow', {
      workflowId: waiting,
      taskQueue: h.taskQueue,
      args: [{ shard: 0, retention: 'P7D' }],
    });
    const carried: FactRouterInput['carried'] = {
      keys: [
        {
          factKey,
          latest: fact(DEDUPE_WINDOW),
          seen: Array.from({ length: DEDUPE_WINDOW }, (_, i) => `${observedAt(i + 1)}|carrier-feed`),
          subscribers: [waiting],
          lastReceivedAt: new Date(start).toISOString(),
        },
      ],
    };
    await h.client.workflow.start<typeof factRouterWorkflow>('factRouterWorkflow', {
      workflowId: factRouterWorkflowId(factKey, h.taskQueue),
      taskQueue: h.taskQueue,
      args: [{ shard: shardOf(factKey), retention: 'P7D', carried }],
    });

    const oldestAtTheBound = await reportFact(h, factKey, Date.parse(observedAt(1)));
    const oneMore = await reportFact(h, factKey, Date.parse(observedAt(DEDUPE_WINDOW + 1)));
    const oldestForgotten = await reportFact(h, factKey, Date.parse(observedAt(1)));

    expect([oldestAtTheBound, oneMore, oldestForgotten]).toEqual(['duplicate', 'recorded', 'recorded']);
    expect((await keyLoadOf(factKey)).seen).toBe(DEDUPE_WINDOW);
  });

  it('keeps answering duplicate for a fact re-sent after the expectations that waited on its key were satisfied', async () => {
    const start = await h.now();
    const id = h.id('satisfied-then-resent');
    const { expectation } = await h.raise(shipmentExpectation(id, start, 10 * DAY));
    const factKey = expectation.satisfiedBy.factKey;
    expect(await reportFact(h, factKey, start - HOUR)).toBe('recorded');
    await h.until(id, (r) => r.closedAt !== undefined);
    // More observations than a key nobody waited on remembers (DEDUPE_WINDOW_UNAWAITED), then the first one again.
    for (let i = 1; i <= DEDUPE_WINDOW_UNAWAITED + 4; i++) await reportFact(h, factKey, start - HOUR + i * 1000);

    expect(await reportFact(h, factKey, start - HOUR)).toBe('duplicate');
    expect((await keyLoadOf(factKey)).subscribers).toBe(0);
  });
});

describe('an anchor', () => {
  /** An anchor with `n` dependents that are placeholders. */
  async function anchorWith(n: number, start: number) {
    const anchorId = h.id('anchor');
    const anchor = await h.raise(shipmentExpectation(anchorId, start, 10 * DAY));
    await h.until(anchorId, (r) => r.state === 'open');
    const handle = h.client.workflow.getHandle(expectationWorkflowId(anchorId));
    for (const workflowId of placeholders(n, anchorId)) await handle.signal(registerDependentSignal, { workflowId });
    return { anchorId, anchor, handle };
  }

  it(`moves the due time of its ${MAX_DEPENDENTS}th dependent`, async () => {
    const start = await h.now();
    const { anchorId, anchor, handle } = await anchorWith(MAX_DEPENDENTS - 1, start);
    const id = h.id('last-dependent');

    await h.raise(shipmentExpectation(id, start, 12 * DAY, { anchor: { expectationId: anchorId, offset: 'P1D' } }));
    await expect
      .poll(() => handle.query(dependentsQuery), { timeout: 15_000 })
      .toEqual({ dependents: MAX_DEPENDENTS, bound: MAX_DEPENDENTS });
    await reportFact(h, anchor.expectation.satisfiedBy.factKey, start);
    const record = await h.until(id, (r) => r.dueAt !== r.projectedDueAt);

    expect(record).toMatchObject({ state: 'open', dueAt: new Date(start + DAY).toISOString() });
  });

  it('withdraws one more dependent, naming the bound, and keeps no more', async () => {
    const start = await h.now();
    const { anchorId, handle } = await anchorWith(MAX_DEPENDENTS, start);
    const id = h.id('one-dependent-too-many');

    await h.raise(shipmentExpectation(id, start, 12 * DAY, { anchor: { expectationId: anchorId, offset: 'P1D' } }));
    const record = await h.until(id, (r) => r.state === 'withdrawn');
    await untilStatus(h, expectationWorkflowId(id), 'COMPLETED');

    expect(record.withdrawnReason).toBe(
      `not anchored: expectation ${JSON.stringify(anchorId)} already has ${MAX_DEPENDENTS} dependents, its bound; ` +
        'withdrawn, as its due time would never follow the anchor',
    );
    expect(await handle.query(dependentsQuery)).toEqual({ dependents: MAX_DEPENDENTS, bound: MAX_DEPENDENTS });
  });
});

describe('a fact router at its carried budget', () => {
  it(`shrinks the dedupe windows of its busiest keys to keep what it carries within ${MAX_ROUTER_CARRIED_BYTES} bytes`, async () => {
    const start = await h.now();
    const shard = 7;
    const keysOfShard = (n: number, tag: string) => {
      const found: string[] = [];
      for (let i = 0; found.length < n; i++) {
        const key = `shipment/${tag}-${i}/scanned`;
        if (shardOf(key) === shard) found.push(key);
      }
      return found;
    };
    const waiting = h.id('stand-in');
    await h.client.workflow.start<typeof factRouterWorkflow>('factRouterWorkflow', {
      workflowId: waiting,
      taskQueue: h.taskQueue,
      args: [{ shard: 0, retention: 'P7D' }],
    });
    // 40 keys waited on, each remembering DEDUPE_WINDOW observations: about 1.5 MB, more than the router may carry.
    const seenAt = (i: number) => `${new Date(start - DAY + i * 1000).toISOString()}|carrier-feed-with-a-long-name`;
    const busy = keysOfShard(40, h.id('busy'));
    const carried: FactRouterInput['carried'] = {
      keys: busy.map((factKey) => ({
        factKey,
        subscribers: [waiting],
        seen: Array.from({ length: DEDUPE_WINDOW }, (_, i) => seenAt(i)),
        lastReceivedAt: new Date(start).toISOString(),
      })),
    };
    expect(Buffer.byteLength(JSON.stringify(carried))).toBeGreaterThan(MAX_ROUTER_CARRIED_BYTES);
    const workflowId = h.id('router');
    await h.client.workflow.start<typeof factRouterWorkflow>('factRouterWorkflow', {
      workflowId,
      taskQueue: h.taskQueue,
      args: [{ shard, retention: 'P7D', carried }],
    });
    const router = h.client.workflow.getHandle(workflowId);
    const record = (factKey: string, i: number) =>
      router.executeUpdate(recordFactUpdate, {
        args: [{ factKey, observedAt: new Date(start + i).toISOString(), source: 'feed' }],
      });

    // The router measures itself every 200 facts it records.
    for (const [i, factKey] of keysOfShard(200, h.id('feed')).entries()) await record(factKey, i);
    const seen = await Promise.all(busy.map(async (factKey) => (await router.query(keyLoadQuery, factKey)).seen));

    const trimmed = seen.filter((n) => n === 8).length;
    expect(trimmed).toBeGreaterThan(0);
    expect(seen.every((n) => n === 8 || n === DEDUPE_WINDOW)).toBe(true);
    // What is left fits: the untrimmed windows, about 37 KB each, stay under the budget.
    expect((busy.length - trimmed) * 37_000).toBeLessThan(MAX_ROUTER_CARRIED_BYTES);
    // Still serving: a re-sent fact of a trimmed key is recognised within its window, a new one recorded.
    expect(await record(busy[seen.indexOf(8)]!, 1_000_000)).toBe('recorded');
  });
});
