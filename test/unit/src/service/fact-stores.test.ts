import { describe, expect, it } from 'vitest';
import { FactNotStoredError } from '../../../../src/service/errors.js';
import { storeWithinFactWait } from '../../../../src/service/fact-stores.js';

/** A store that finishes when the test says so. */
function gate() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  return { done, release };
}

describe('a fact store within the fact wait', () => {
  it('answers once the store is done within the fact wait', async () => {
    await expect(storeWithinFactWait(() => Promise.resolve(), 1_000, 1)).resolves.toBeUndefined();
  });

  it('answers 503 fact-not-stored at the fact wait, and lets the store run on rather than cancel it', async () => {
    const store = gate();
    let finished = false;
    const answer = storeWithinFactWait(() => store.done.then(() => void (finished = true)), 20, 3);
    await expect(answer).rejects.toBeInstanceOf(FactNotStoredError);
    await expect(answer).rejects.toThrow(/3 fact\(s\) within the fact wait \(20 ms, WATCHER_FACT_WAIT\)/);
    expect(finished).toBe(false);
    store.release();
    await store.done;
    await new Promise((resolve) => setImmediate(resolve));
    expect(finished).toBe(true);
  });
});
