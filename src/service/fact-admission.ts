/**
 * How many fact stores a bridge lets wait on Temporal at once (DESIGN 3.2). The bound grows by one per bound's worth of
 * stores answered within half the fact wait and halves on a slower one (once per half fact wait), so that a server past its knee holds a short
 * queue and answers within the wait, instead of a long one where every store waits out, is answered 503 and is
 * stored again on its resend.
 */
import type { TemporalCall } from '../temporal/call.js';
import { FactNotStoredError } from './errors.js';

/** The bound a bridge starts at, and the least and most it may take. */
export const FACT_ADMISSION = { initial: 32, least: 2, most: 256 } as const;

/** The bound (its whole part is the stores let in at once) and the stores in flight, for tests. */
export interface FactAdmission {
  readonly call: TemporalCall;
  readonly bound: () => number;
  readonly inFlight: () => number;
}

/** Wraps the fact call: a store past the bound is refused at once with 503 `fact-not-stored`, nothing sent. */
export function createFactAdmission(call: TemporalCall, factWaitMs: number, now = () => Date.now()): FactAdmission {
  let bound: number = FACT_ADMISSION.initial;
  let inFlight = 0;
  let halvedAt = -Infinity;
  const admitted: TemporalCall = async (fn, timeoutMs) => {
    if (inFlight >= Math.floor(bound)) {
      throw new FactNotStoredError(
        `the bridge has ${inFlight} fact stores waiting on Temporal, as many as it lets wait while Temporal answers ` +
          'slowly; nothing was stored: send the same request again after Retry-After',
      );
    }
    inFlight++;
    const started = now();
    let quick = false;
    try {
      const result = await call(fn, timeoutMs);
      quick = now() - started <= factWaitMs / 2;
      return result;
    } finally {
      inFlight--;
      if (quick) bound = Math.min(FACT_ADMISSION.most, bound + 1 / bound);
      else if (now() - halvedAt >= factWaitMs / 2) {
        bound = Math.max(FACT_ADMISSION.least, bound / 2);
        halvedAt = now();
      }
    }
  };
  return { call: admitted, bound: () => bound, inFlight: () => inFlight };
}
