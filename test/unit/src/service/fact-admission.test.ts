import { describe, expect, it } from 'vitest';
import { FactNotStoredError } from '../../../../src/service/errors.js';
import { createFactAdmission, FACT_ADMISSION } from '../../../../src/service/fact-admission.js';

/** A fact call whose stores take `takeMs` of a clock the test moves, each held until the test releases it. */
function rig(factWaitMs = 2_000) {
  let clock = 0;
  const held: Array<() => void> = [];
  const call = <T>(fn: () => Promise<T>) => new Promise<void>((resolve) => held.push(resolve)).then(fn);
  const admission = createFactAdmission(call, factWaitMs, () => clock);
  const store = () => admission.call(async () => 'stored');
  const release = async (count: number, takeMs: number) => {
    clock += takeMs;
    for (const resolve of held.splice(0, count)) resolve();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { admission, store, release };
}

describe('createFactAdmission', () => {
  it('refuses a store past its bound at once with fact-not-stored, and admits again once one is answered', async () => {
    const { admission, store, release } = rig();
    const admitted = Array.from({ length: FACT_ADMISSION.initial }, store);
    await expect(store()).rejects.toBeInstanceOf(FactNotStoredError);
    expect(admission.inFlight()).toBe(FACT_ADMISSION.initial);
    await release(1, 10);
    const next = store();
    expect(admission.inFlight()).toBe(FACT_ADMISSION.initial);
    await release(FACT_ADMISSION.initial, 10);
    await expect(Promise.all([...admitted, next])).resolves.toContain('stored');
  });

  it('halves its bound on a store slower than half the fact wait, once per half wait, and grows back on quick ones', async () => {
    const { admission, store, release } = rig(2_000);
    const slow = [store(), store()];
    await release(2, 1_500);
    await Promise.all(slow);
    expect(admission.bound()).toBe(FACT_ADMISSION.initial / 2);
    const answers = Promise.allSettled(Array.from({ length: 40 }, store));
    await release(FACT_ADMISSION.initial / 2, 10);
    const settled = await answers;
    expect(settled.filter((a) => a.status === 'rejected')).toHaveLength(40 - FACT_ADMISSION.initial / 2);
    // A bound's worth of quick stores grows it by about one.
    expect(admission.bound()).toBeGreaterThan(FACT_ADMISSION.initial / 2 + 0.9);
    expect(admission.bound()).toBeLessThan(FACT_ADMISSION.initial / 2 + 1);
  });

  it('never goes below its least', async () => {
    const { admission, store, release } = rig(2_000);
    for (let i = 0; i < 10; i++) {
      const one = store();
      await release(1, 1_500);
      await one;
    }
    expect(admission.bound()).toBe(FACT_ADMISSION.least);
    await expect(Promise.all([store(), store(), store()])).rejects.toBeInstanceOf(FactNotStoredError);
    await release(2, 10);
  });
});
