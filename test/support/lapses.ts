/**
 * The lapse a watcher raises on an expectation, as clients and the delivery activity read it.
 */
import type { Expectation, Lapse } from '../../core/types.js';

/**
 * The lapse `lapse` of `expectation` at `lapsedAt`, the first of its lineage, due when it was raised to be. `lapse` may
 * be a value this watcher does not raise (a later watcher's), which a client must still read.
 */
export function lapseFor<K extends string>(
  expectation: Expectation,
  lapse: K,
  lapsedAt: string,
): Omit<Lapse, 'lapse'> & { lapse: K } {
  const { expectationId, kind, subject, expects, dueAt } = expectation;
  return { expectationId, kind, subject, expects, lapse, projectedDueAt: dueAt, dueAt, lapsedAt, lineage: 0 };
}
