/**
 * The bridge's fact stores (DESIGN 3.2): a request is answered 503 once the fact wait has passed, but its store is
 * never cancelled there. A cancelled store may have been written anyway, so cancelling saves nothing, and it makes
 * the server roll back work under exactly the load that made it slow (on the dev server's SQLite, an interrupted
 * write fails the writes after it too). What a slow server is asked stays bounded without refusing anything: a bridge
 * has one signal in flight per router, and a resend waits for the store still carrying its facts, or is answered at
 * once when that store landed, instead of storing them again (src/temporal/router-signals.ts).
 */
import { FactNotStoredError } from './errors.js';

/**
 * Runs `store`: resolves when it is done within `waitMs`, and throws FactNotStoredError past it while the store goes
 * on to its own deadline (whatever it comes to, the client sends the request again; the race has already taken its
 * rejection, so none goes unhandled).
 */
export async function storeWithinFactWait(store: () => Promise<void>, waitMs: number, facts: number): Promise<void> {
  const storing = store();
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<'waited'>((resolve) => (timer = setTimeout(() => resolve('waited'), waitMs)));
  try {
    if ((await Promise.race([storing, waited])) !== 'waited') return;
  } finally {
    clearTimeout(timer);
  }
  throw new FactNotStoredError(
    `Temporal did not store the request's ${facts} fact(s) within the fact wait (${waitMs} ms, WATCHER_FACT_WAIT); ` +
      'send the same request again: it waits for the store still under way rather than storing the facts twice, ' +
      'and a fact stored late counts from its first reception',
  );
}
