/**
 * A router's transitions (workflows/fact-router-state.ts) without a server, on a clock the test sets: subscriptions
 * and their bound, each answer to a recorded fact, held-back forwards, batches of stored facts, the update's refusals,
 * the memo and what continue-as-new carries.
 */
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../../core/fact-shards.js';
import { WRONG_FACT_KEY } from '../../../core/failures.js';
import { DEDUPE_WINDOW, MAX_KEY_SUBSCRIBERS, ROUTER_CROWDED_KEY } from '../../../core/limits.js';
import type { Fact } from '../../../core/types.js';
import { FORWARD_DEFERRAL_MS, RouterState } from '../../../workflows/fact-router-state.js';
import { OUTBOX_BATCH } from '../../../workflows/outbox.js';

const T = Date.parse('2026-12-01T00:00:00Z');
const KEY = 'shipment/S1/delivered';
const iso = (ms: number) => new Date(ms).toISOString();
const fact = (observedMs: number, source = 'feed', factKey = KEY): Fact => ({
  factKey,
  observedAt: iso(observedMs),
  source,
  receivedAt: iso(observedMs),
});

function routerOf(retention = 'PT1H', carried?: ConstructorParameters<typeof RouterState>[0]['carried']) {
  const clock = { ms: T };
  const router = new RouterState({ shard: shardOf(KEY), retention, ...(carried ? { carried } : {}) }, () => clock.ms);
  return { router, clock };
}

describe('a subscription', () => {
  it('queues the fact the key retains, marked held, within the retention only', () => {
    const { router, clock } = routerOf();
    router.record(fact(T));
    router.subscribe('expectation:a', KEY);
    clock.ms = T + 3_600_000;
    router.subscribe('expectation:b', KEY);

    expect(router.outbox.take()).toEqual([['expectation:a', { ...fact(T), held: true }]]);
    expect(router.keyLoad(KEY)).toMatchObject({ subscribers: 2, bound: MAX_KEY_SUBSCRIBERS });
  });

  it(`past ${MAX_KEY_SUBSCRIBERS} on a key is refused, and the newcomer withdrawn with the reason`, () => {
    const { router } = routerOf();
    for (let i = 0; i < MAX_KEY_SUBSCRIBERS; i++) router.subscribe(`expectation:${i}`, KEY);
    router.subscribe('expectation:late', KEY);
    router.subscribe('expectation:0', KEY);

    expect(router.keyLoad(KEY).subscribers).toBe(MAX_KEY_SUBSCRIBERS);
    const [refusal] = router.refused.take();
    expect(refusal).toEqual(['expectation:late', { reason: expect.stringContaining('its bound; withdrawn') }]);
    expect(router.refused.size).toBe(0);
  });

  it('of a whole request subscribes each expectation to its own key', () => {
    const { router } = routerOf();
    router.subscribeAll({ workflowIds: ['expectation:a', 'expectation:b', 'expectation:c'], factKeys: [KEY, null] });
    expect(router.keyLoad(KEY).subscribers).toBe(1);
    expect(router.keys.size).toBe(1);
  });
});

describe('a recorded fact', () => {
  it('is queued to every subscriber and answered once the loop has sent it', () => {
    const { router } = routerOf();
    router.subscribe('expectation:a', KEY);
    router.subscribe('expectation:b', KEY);
    const before = router.changes;

    const recorded = router.record(fact(T), { listForwarded: true });

    expect(recorded).toEqual({
      change: before + 1,
      answer: { result: 'recorded', forwardedTo: ['expectation:a', 'expectation:b'] },
    });
    expect(router.outbox.take().map(([id]) => id)).toEqual(['expectation:a', 'expectation:b']);
  });

  it('sent again (same observedAt and source) is a duplicate, forwarded to nobody', () => {
    const { router, clock } = routerOf();
    router.record(fact(T));
    router.subscribe('expectation:a', KEY);
    router.outbox.take();
    clock.ms = T + 5;

    expect(router.record(fact(T))).toEqual({ answer: 'duplicate' });
    expect(router.record(fact(T), { tellFirstReceipt: true })).toEqual({
      answer: { result: 'duplicate', firstReceivedAt: iso(T) },
    });
    expect(router.outbox.size).toBe(0);
  });

  it('that nobody waits on is kept for the retention and answered at once', () => {
    const { router } = routerOf();
    expect(router.record(fact(T))).toEqual({ answer: 'recorded' });
    expect(router.record(fact(T + 1), { tellUnawaited: true })).toEqual({ answer: 'unawaited' });
    expect(router.keys.get(KEY)?.latest).toEqual(fact(T + 1));
  });

  it('is forgotten at once under a zero retention', () => {
    const { router } = routerOf('PT0S');
    router.record(fact(T));
    expect(router.keys.size).toBe(0);
  });
});

describe('a forward held back for a caller that delivers the fact itself', () => {
  const callerDelivers = { listForwarded: true, callerDelivers: true };

  it('goes out after FORWARD_DEFERRAL_MS to a subscriber still there', () => {
    const { router, clock } = routerOf();
    router.subscribe('expectation:a', KEY);
    router.record(fact(T), callerDelivers);
    expect(router.nextDeferredAtMs()).toBe(T + FORWARD_DEFERRAL_MS);

    clock.ms = T + FORWARD_DEFERRAL_MS - 1;
    router.releaseDeferred();
    expect(router.outbox.size).toBe(0);
    clock.ms = T + FORWARD_DEFERRAL_MS;
    router.releaseDeferred();

    expect(router.outbox.take()).toEqual([['expectation:a', fact(T)]]);
    expect(router.nextDeferredAtMs()).toBeUndefined();
  });

  it('goes nowhere once the subscriber took it and left', () => {
    const { router, clock } = routerOf();
    router.subscribe('expectation:a', KEY);
    router.record(fact(T), callerDelivers);
    router.unsubscribe('expectation:a');
    clock.ms = T + FORWARD_DEFERRAL_MS;
    router.releaseDeferred();
    expect(router.outbox.size).toBe(0);
  });

  it('is carried over continue-as-new as a due one', () => {
    const { router } = routerOf();
    router.subscribe('expectation:a', KEY);
    router.record(fact(T), callerDelivers);
    expect(router.carried().outbox).toEqual([{ workflowId: 'expectation:a', fact: fact(T) }]);
  });
});

describe("a bridge's batch", () => {
  it('records the facts of this router’s keys, skips another’s, and stores the subject facts', () => {
    const other = ['a', 'b', 'c', 'd'].map((s) => `k/${s}`).find((key) => shardOf(key) !== shardOf(KEY))!;
    const { router } = routerOf();
    const onSubject = { subject: { type: 'shipment', id: 'S1' }, factKey: KEY, observedAt: iso(T), receivedAt: iso(T) };

    router.store({ facts: [fact(T), fact(T, 'feed', other)], subjects: [onSubject], retention: 'P1D' });

    expect([...router.keys.keys()]).toEqual([KEY]);
    expect(router.retention).toBe('P1D');
    expect(router.carried().subjects?.[0]?.latest).toEqual(onSubject);
  });

  it('ignores a retention the router cannot compute with (a signal cannot be refused)', () => {
    const { router } = routerOf();
    router.store({ facts: [fact(T)], retention: 'soon' });
    expect(router.retention).toBe('PT1H');
  });
});

describe('the recordFact update', () => {
  it('is refused for a key of another router, and for a retention that is no duration', () => {
    const { router } = routerOf();
    const other = ['a', 'b', 'c', 'd'].map((s) => `k/${s}`).find((key) => shardOf(key) !== shardOf(KEY))!;

    expect(() => router.validateRecord(fact(T, 'feed', other))).toThrow(
      expect.objectContaining({ type: WRONG_FACT_KEY }),
    );
    expect(() => router.validateRecord(fact(T), { retention: 'soon' })).toThrow();
    expect(() => router.validateRecord(fact(T), { retention: 'P1D' })).not.toThrow();
  });
});

describe('the memo and the outbox', () => {
  it(`name the keys with ${ROUTER_CROWDED_KEY} subscribers or more, written again only when they moved`, () => {
    const { router } = routerOf();
    expect(router.memoIfMoved()).toEqual({ crowded: {} });
    for (let i = 0; i < ROUTER_CROWDED_KEY; i++) router.subscribe(`expectation:${i}`, KEY);

    expect(router.memoIfMoved()).toEqual({ crowded: { [KEY]: ROUTER_CROWDED_KEY } });
    expect(router.memoIfMoved()).toBeUndefined();
  });

  it(`send at most ${OUTBOX_BATCH} forwards a batch, the rest in the next`, () => {
    const { router } = routerOf();
    for (let i = 0; i < OUTBOX_BATCH + 1; i++) router.outbox.add(`expectation:${i}`, fact(T));
    expect(router.outbox.take()).toHaveLength(OUTBOX_BATCH);
    expect(router.outbox.take()).toHaveLength(1);
  });

  it('carry the subscribers and a key’s window over continue-as-new', () => {
    const { router } = routerOf();
    router.subscribe('expectation:a', KEY);
    router.record(fact(T));
    const next = routerOf('PT1H', router.carried()).router;

    expect(next.record(fact(T))).toEqual({ answer: 'duplicate' });
    expect(next.carried()).toEqual(router.carried());
  });

  it('carry a window whose oldest instants an earlier run did not keep, and answer those without one', () => {
    const seen = [`${iso(T)}|feed`, `${iso(T + 1)}|feed`, `${iso(T + 2)}|feed`];
    const carried = { keys: [{ factKey: KEY, subscribers: ['expectation:a'], seen, seenAt: [T + 2] }] };
    const { router } = routerOf('PT1H', carried);

    expect(router.record(fact(T), { tellFirstReceipt: true })).toEqual({ answer: 'duplicate' });
    expect(router.record(fact(T + 2), { tellFirstReceipt: true })).toEqual({
      answer: { result: 'duplicate', firstReceivedAt: iso(T + 2) },
    });
    expect(router.carried().keys).toEqual([{ ...carried.keys[0], awaited: true }]);
  });
});

describe("a key's state", () => {
  it('keeps its subscribers in the order they came, one or many, and none once they left', () => {
    const { router } = routerOf();
    router.subscribe('expectation:a', KEY);
    router.subscribe('expectation:a', KEY);
    expect(router.keyLoad(KEY).subscribers).toBe(1);
    router.subscribe('expectation:b', KEY);
    router.subscribe('expectation:c', KEY);
    router.unsubscribe('expectation:b');
    router.unsubscribe('expectation:c');
    router.subscribe('expectation:d', KEY);

    expect(router.carried().keys[0]?.subscribers).toEqual(['expectation:a', 'expectation:d']);
    router.unsubscribe('expectation:a');
    router.unsubscribe('expectation:d');
    expect(router.keyLoad(KEY).subscribers).toBe(0);
    expect(router.keys.size).toBe(0);
  });

  it(`remembers the last ${DEDUPE_WINDOW} observations of a key waited on, the oldest let go first`, () => {
    const { router } = routerOf();
    router.subscribe('expectation:a', KEY);
    for (let i = 0; i <= DEDUPE_WINDOW; i++) router.record(fact(T + i));

    expect(router.keyLoad(KEY).seen).toBe(DEDUPE_WINDOW);
    expect(router.record(fact(T + 1))).toEqual({ answer: 'duplicate' });
    expect(router.record(fact(T))).not.toEqual({ answer: 'duplicate' });
  });
});
