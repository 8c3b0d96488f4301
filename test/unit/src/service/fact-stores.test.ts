import { describe, expect, it } from 'vitest';
import { FactNotStoredError } from '../../../../src/service/errors.js';
import { createFactStores } from '../../../../src/service/fact-stores.js';

/** A store that finishes when the test says so. */
function gate() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  return { done, release };
}

describe('the fact stores of a bridge', () => {
  it('answers once the store is done within the fact wait', async () => {
    const stores = createFactStores();
    await expect(stores.store(() => Promise.resolve(), 1_000, 1)).resolves.toBeUndefined();
    expect(stores.late()).toBe(0);
  });

  it('answers 503 fact-not-stored at the fact wait, and lets the store run on rather than cancel it', async () => {
    const stores = createFactStores();
    const store = gate();
    let finished = false;
    const answer = stores.store(() => store.done.then(() => void (finished = true)), 20, 3);
    await expect(answer).rejects.toBeInstanceOf(FactNotStoredError);
    await expect(answer).rejects.toThrow(/3 fact\(s\) within the fact wait \(20 ms, WATCHER_FACT_WAIT\)/);
    expect(stores.late()).toBe(1);
    store.release();
    await store.done;
    await new Promise((resolve) => setImmediate(resolve));
    expect(finished).toBe(true);
    expect(stores.late()).toBe(0);
  });

  it('counts a store that failed past its wait as done', async () => {
    const stores = createFactStores();
    let fail!: (error: Error) => void;
    const failing = new Promise<void>((_, reject) => (fail = reject));
    await expect(stores.store(() => failing, 5, 1)).rejects.toThrow(FactNotStoredError);
    expect(stores.late()).toBe(1);
    fail(new Error('deadline exceeded'));
    await failing.catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(stores.late()).toBe(0);
  });
});
