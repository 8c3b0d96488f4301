/**
 * What the statistics may spend of the visibility store (src/service/statistics-cache.ts), through the statistics
 * service on a visibility store of the test's own: a raise waits for no read and starts few, a window is one filter
 * however it is spelt, computations are bounded at once and per principal.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../../src/auth/principals.js';
import type { ExpectationRecord } from '../../../../core/schemas/record.js';
import { BridgeBusyError, QuotaExceededError } from '../../../../src/service/errors.js';
import {
  BACKGROUND_COMPUTATIONS,
  COMPUTATIONS_PER_MINUTE,
  MAX_COMPUTATIONS,
  windowKey,
} from '../../../../src/service/statistics-cache.js';
import { createStatisticsService, type StatisticsDeps } from '../../../../src/service/statistics.js';
import { deliveryExpectation } from '../../../support/fixtures.js';
import { fakeVisibility, type FakeVisibility } from '../../../support/visibility.js';

const T0 = Date.parse('2026-12-07T00:00:00.000Z');
const reader = (id: string): Principal => ({ id, roles: ['reader'] });

/** An expectation of `agent` and `kind`, raised an hour before T0 and satisfied `seconds` after its raise. */
function satisfied(k: number, agent: string, kind: string, seconds: number): ExpectationRecord {
  const raisedAt = T0 - 3_600_000;
  return {
    expectation: { ...deliveryExpectation(`e-${k}`, new Date(T0).toISOString()), kind, basis: 'observed' },
    projectedDueAt: new Date(T0).toISOString(),
    dueAt: new Date(T0).toISOString(),
    state: 'satisfied',
    raisedAt: new Date(raisedAt).toISOString(),
    observedAt: new Date(raisedAt + seconds * 1000).toISOString(),
    late: false,
    lapses: [],
    lineage: 0,
    agent: { id: agent },
    origin: {},
  };
}

/** Ten of agent-a's `pickup` satisfied after 10, 20, ... 100 s: a p10 of 10 s. */
const tenPickups = Array.from({ length: 10 }, (_, k) => satisfied(k, 'agent-a', 'pickup', (k + 1) * 10));

function service(visibility: FakeVisibility, extra: Partial<StatisticsDeps> = {}) {
  let clock = T0;
  const statistics = createStatisticsService({
    client: visibility.client,
    namespace: 'default',
    taskQueue: 'watcher',
    call: (fn) => fn(),
    now: () => clock,
    ...extra,
  });
  return { statistics, advance: (ms: number) => (clock += ms) };
}

/** What `promise` settles to within `ms`, or 'still waiting'. */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), ms))]);

/** Lets the fake store answer and the service take the answer in. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe("a raise's observed-due warning", () => {
  it('of 100 kinds never known waits for no visibility read, and starts no more than its share of them', async () => {
    const store = fakeVisibility(() => [], { hold: true });
    const { statistics } = service(store);
    const kinds = Array.from({ length: 100 }, (_, k) => `kind-${k}`);

    const needs = await within(Promise.all(kinds.map((kind) => statistics.observedNeed('agent-a', kind))), 1_000);

    expect(needs).toEqual(kinds.map(() => undefined));
    expect(store.queries).toHaveLength(BACKGROUND_COMPUTATIONS);
    expect(BACKGROUND_COMPUTATIONS).toBeLessThan(MAX_COMPUTATIONS);
    store.release();
  });

  it('is given from what is known: nothing at first, then the figures the background read found', async () => {
    const store = fakeVisibility(() => tenPickups);
    const { statistics } = service(store);

    const first = await statistics.observedNeed('agent-a', 'pickup');
    await settle();
    const next = await statistics.observedNeed('agent-a', 'pickup');

    expect(first).toBeUndefined();
    expect(next).toBe(10);
    expect(store.queries).toHaveLength(1);
  });

  it('uses what a read of GET /v1/statistics found, with the same filters, without a read of its own', async () => {
    const store = fakeVisibility(() => tenPickups);
    const { statistics } = service(store);
    await statistics.read({ id: 'agent-a', roles: ['agent'] }, { kind: 'pickup', window: 'P7D' });

    expect(await statistics.observedNeed('agent-a', 'pickup')).toBe(10);
    expect(store.queries).toHaveLength(1);
  });
});

describe('the window of a filter', () => {
  it('is one filter however the span is spelt: one read, each answer naming the window as asked', async () => {
    const store = fakeVisibility(() => tenPickups);
    const { statistics } = service(store);

    const answers = [];
    for (const window of ['PT1H', 'PT60M', 'PT3600S']) answers.push(await statistics.read(reader('ops'), { window }));

    expect(store.queries).toHaveLength(1);
    expect(answers.map((answer) => answer.window)).toEqual(['PT1H', 'PT60M', 'PT3600S']);
    expect(new Set(answers.map((answer) => JSON.stringify(answer.items))).size).toBe(1);
  });

  it('is compared as a span: exact units add up, calendar months stay months', () => {
    expect(windowKey('P1D')).toBe(windowKey('PT24H'));
    expect(windowKey('P1W')).toBe(windowKey('P7D'));
    expect(windowKey('P1Y')).toBe(windowKey('P12M'));
    expect(windowKey('P1M')).not.toBe(windowKey('P31D'));
    expect(windowKey('PT1.5H')).toBe(windowKey('PT90M'));
  });
});

describe('computations at once', () => {
  const kinds = (n: number) => Array.from({ length: n }, (_, k) => ({ kind: `kind-${k}`, window: 'P7D' }));

  it(`are at most ${MAX_COMPUTATIONS}: one more waits for a place, and is answered 503 when none frees in time`, async () => {
    const store = fakeVisibility(() => [], { hold: true });
    const { statistics } = service(store, { budget: { slotWaitMs: 50 } });
    const running = kinds(MAX_COMPUTATIONS).map((query, k) => statistics.read(reader(`ops-${k}`), query));

    const refused = await statistics.read(reader('ops-late'), { kind: 'late', window: 'P7D' }).catch((e: unknown) => e);

    expect(store.queries).toHaveLength(MAX_COMPUTATIONS);
    expect(refused).toBeInstanceOf(BridgeBusyError);
    expect((refused as Error).message).toMatch(/computing 4 statistics, its bound/);
    store.release();
    await Promise.all(running);
  });

  it('hand a freed place to the read that waits for it', async () => {
    const store = fakeVisibility(() => [], { hold: true });
    const { statistics } = service(store);
    const all = kinds(MAX_COMPUTATIONS + 1).map((query, k) => statistics.read(reader(`ops-${k}`), query));
    await settle();
    const before = store.queries.length;

    store.release();
    await Promise.all(all);

    expect(before).toBe(MAX_COMPUTATIONS);
    expect(store.queries).toHaveLength(MAX_COMPUTATIONS + 1);
  });
});

describe('computations per principal', () => {
  it(`are at most ${COMPUTATIONS_PER_MINUTE} a minute (429 past them); cached answers and other principals are not counted`, async () => {
    const store = fakeVisibility(() => []);
    const { statistics, advance } = service(store);
    const ops = reader('ops');
    for (let k = 0; k < COMPUTATIONS_PER_MINUTE; k++) await statistics.read(ops, { kind: `k-${k}`, window: 'P7D' });

    const refused = await statistics.read(ops, { kind: 'one-more', window: 'P7D' }).catch((e: unknown) => e);
    const cached = await statistics.read(ops, { kind: 'k-0', window: 'P7D' });
    const other = await statistics.read(reader('other'), { kind: 'one-more', window: 'P7D' });
    advance(60_000 / COMPUTATIONS_PER_MINUTE);
    const refilled = await statistics.read(ops, { kind: 'yet-another', window: 'P7D' });

    expect(refused).toBeInstanceOf(QuotaExceededError);
    expect(refused).toMatchObject({
      quota: 'statistics-per-minute',
      limit: COMPUTATIONS_PER_MINUTE,
      retryAfterSeconds: 3,
    });
    expect([cached.items, other.items, refilled.items]).toEqual([[], [], []]);
    expect(store.queries).toHaveLength(COMPUTATIONS_PER_MINUTE + 2);
  });

  it("count a raise's background reads too, and then leave its warnings to what is known", async () => {
    const store = fakeVisibility(() => []);
    const { statistics } = service(store, { budget: { perPrincipalPerMinute: 3 } });

    for (let k = 0; k < 10; k++) {
      await statistics.observedNeed('agent-a', `kind-${k}`);
      await settle();
    }
    const refused = await statistics
      .read({ id: 'agent-a', roles: ['agent'] }, { kind: 'other', window: 'P7D' })
      .catch((e: unknown) => e);

    expect(store.queries).toHaveLength(3);
    expect(refused).toBeInstanceOf(QuotaExceededError);
  });
});
