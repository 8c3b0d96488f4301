/**
 * The bridge's fact stores (DESIGN 3.2): a request is answered 503 once the fact wait has passed, but its store is
 * never cancelled there. A cancelled store may have been written anyway, so cancelling saves nothing, and it makes
 * the server roll back work under exactly the load that made it slow (on the dev server's SQLite, an interrupted
 * write fails the writes after it too). While too many stores run past their wait, new ones are refused at once.
 */
import { FactNotStoredError } from './errors.js';

/** Stores that may run past their fact wait at once, per bridge, before new requests' facts are refused at once. */
export const MAX_LATE_FACT_STORES = 64;

export interface FactStores {
  /**
   * Runs `store`: resolves when it is done within `waitMs`, and throws FactNotStoredError past it while the store goes
   * on to its own deadline. Throws FactNotStoredError at once, without storing, while MAX_LATE_FACT_STORES run late.
   */
  store(store: () => Promise<void>, waitMs: number, facts: number): Promise<void>;
  /** Stores now running past their fact wait. */
  late(): number;
}

const notStored = (facts: number, why: string) =>
  new FactNotStoredError(
    `Temporal did not store the request's ${facts} fact(s) ${why}; send the same request again: a fact counts from ` +
      'the reception that is stored in time, and one stored twice is recognised as a re-delivery',
  );

export function createFactStores(maxLate = MAX_LATE_FACT_STORES): FactStores {
  let late = 0;
  return {
    late: () => late,
    async store(store, waitMs, facts) {
      if (late >= maxLate) {
        throw notStored(facts, `at once: ${late} earlier stores of this bridge are still running past the fact wait`);
      }
      const storing = store();
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<'waited'>((resolve) => (timer = setTimeout(() => resolve('waited'), waitMs)));
      try {
        if ((await Promise.race([storing, waited])) !== 'waited') return;
      } finally {
        clearTimeout(timer);
      }
      late++;
      storing.then(
        () => late--,
        () => late--,
      );
      throw notStored(facts, `within the fact wait (${waitMs} ms, WATCHER_FACT_WAIT)`);
    },
  };
}
