/**
 * The per-principal quotas (src/service/quotas.ts) on a clock the test moves: the per-minute buckets (a burst up to
 * the quota, then the rate; Retry-After the time until the request fits), principals apart, a request larger than the
 * quota, and the open-expectations count reused for a while with this bridge's raises added to it.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../../src/auth/principals.js';
import { QuotaExceededError } from '../../../../src/service/errors.js';
import { createQuotas, type QuotaSettings } from '../../../../src/service/quotas.js';

const agentA: Principal = { id: 'agent-a', roles: ['agent'] };
const agentB: Principal = { id: 'agent-b', roles: ['agent'] };

function setup(settings: Partial<QuotaSettings> = {}, open: Record<string, number> = {}) {
  let now = 1_000_000;
  const counts: string[] = [];
  const quotas = createQuotas({
    settings: { openExpectations: 0, raisesPerMinute: 0, factsPerMinute: 0, ...settings },
    countOpen: async (id) => {
      counts.push(id);
      return open[id] ?? 0;
    },
    now: () => now,
  });
  return { quotas, counts, advance: (ms: number) => void (now += ms) };
}

const refusalOf = (fn: () => unknown): QuotaExceededError | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (error instanceof QuotaExceededError) return error;
    throw error;
  }
};

describe('facts per minute', () => {
  it('takes a burst up to the quota, refuses one more with the seconds until it fits, and takes it then', () => {
    const { quotas, advance } = setup({ factsPerMinute: 60 });

    const burst = refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 60 }));
    const oneMore = refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 1 }));
    advance(999);
    const tooSoon = refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 1 }));
    advance(1);
    const inTime = refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 1 }));

    expect(burst).toBeUndefined();
    expect(oneMore).toMatchObject({ quota: 'facts-per-minute', limit: 60, retryAfterSeconds: 1 });
    expect(oneMore?.message).toBe(
      "quota facts-per-minute: principal 'agent-a' may send at most 60 facts per minute; this request carries 1, which fit again in 1 s",
    );
    expect(tooSoon).toBeDefined();
    expect(inTime).toBeUndefined();
  });

  it('says how long until the whole request fits', () => {
    const { quotas } = setup({ factsPerMinute: 60 });
    quotas.takeRates(agentA, { raises: 0, facts: 60 });

    expect(refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 30 }))?.retryAfterSeconds).toBe(30);
  });

  it('keeps each principal apart', () => {
    const { quotas } = setup({ factsPerMinute: 1 });
    quotas.takeRates(agentA, { raises: 0, facts: 1 });

    expect(refusalOf(() => quotas.takeRates(agentB, { raises: 0, facts: 1 }))).toBeUndefined();
  });

  it('refuses a request larger than the quota itself, asking to split it', () => {
    const { quotas } = setup({ factsPerMinute: 10 });

    const refused = refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 11 }));

    expect(refused?.message).toBe(
      "quota facts-per-minute: principal 'agent-a' may send at most 10 facts per minute, and this request alone carries 11: split it",
    );
    expect(refused?.retryAfterSeconds).toBe(60);
  });

  it('takes nothing from a request it refuses, in either quota', () => {
    const { quotas } = setup({ factsPerMinute: 2, raisesPerMinute: 1 });
    quotas.takeRates(agentA, { raises: 1, facts: 0 });

    const refused = refusalOf(() => quotas.takeRates(agentA, { raises: 1, facts: 2 }));
    const factsAlone = refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 2 }));

    expect(refused?.quota).toBe('raises-per-minute');
    expect(factsAlone).toBeUndefined();
  });

  it('is off at 0', () => {
    const { quotas } = setup({ factsPerMinute: 0 });

    expect(refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 100_000 }))).toBeUndefined();
  });

  it('names the window when it is not a minute', () => {
    const { quotas } = setup({ factsPerMinute: 1, windowMs: 2_000 });
    quotas.takeRates(agentA, { raises: 0, facts: 1 });

    expect(refusalOf(() => quotas.takeRates(agentA, { raises: 0, facts: 1 }))?.message).toContain(
      'at most 1 facts per 2 s',
    );
  });
});

describe('raises per minute', () => {
  it('counts expectation items as facts per minute counts facts', () => {
    const { quotas } = setup({ raisesPerMinute: 3 });

    quotas.takeRates(agentA, { raises: 3, facts: 0 });

    expect(refusalOf(() => quotas.takeRates(agentA, { raises: 1, facts: 0 }))).toMatchObject({
      quota: 'raises-per-minute',
      limit: 3,
    });
  });
});

describe('open expectations', () => {
  it('lets a principal up to its quota and refuses one more, with the count the store gave', async () => {
    const { quotas } = setup({ openExpectations: 5 }, { 'agent-a': 4 });

    await expect(quotas.checkOpen(agentA, 1)).resolves.toBeUndefined();
    const refused = await quotas.checkOpen(agentA, 2).catch((e: unknown) => e);

    expect(refused).toBeInstanceOf(QuotaExceededError);
    expect(refused).toMatchObject({ quota: 'open-expectations', limit: 5, retryAfterSeconds: 5 });
    expect((refused as Error).message).toMatch(
      /^quota open-expectations: principal 'agent-a' may have at most 5 open expectations and has 4 /,
    );
  });

  it('reuses a count for its cache time, adding the raises made meanwhile, then asks the store again', async () => {
    const open = { 'agent-a': 3 };
    const { quotas, counts, advance } = setup({ openExpectations: 5, openCountCacheMs: 5_000 }, open);

    await quotas.checkOpen(agentA, 1);
    quotas.raised(agentA, 2);
    const whileCached = await quotas.checkOpen(agentA, 1).catch((e: unknown) => e);
    open['agent-a'] = 1;
    advance(5_000);
    const afterwards = await quotas.checkOpen(agentA, 1).catch((e: unknown) => e);

    expect(whileCached).toBeInstanceOf(QuotaExceededError);
    expect(afterwards).toBeUndefined();
    expect(counts).toEqual(['agent-a', 'agent-a']);
  });

  it('asks nothing when nothing is added or the quota is off', async () => {
    const off = setup({ openExpectations: 0 });
    const on = setup({ openExpectations: 5 });

    await off.quotas.checkOpen(agentA, 10);
    await on.quotas.checkOpen(agentA, 0);

    expect([...off.counts, ...on.counts]).toEqual([]);
  });
});
