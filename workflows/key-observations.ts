/**
 * What a router remembers of a key's observations (DESIGN 3.2): each by its dedupe key, (observedAt, source), with
 * when a bridge received it. Pure, so that the router dedupes with it and a history read (activities/history-reads.ts)
 * tells from a run's carried state the same re-deliveries, and the observations the router took as new.
 */
import type { Fact } from '../core/types.js';
import type { RoutedFact, RoutedKey } from './messages.js';

/** An observation's identity: its instant and its source. */
export const dedupeKey = (fact: Pick<Fact, 'observedAt' | 'source'>): string =>
  `${new Date(Date.parse(fact.observedAt)).toISOString()}|${fact.source}`;

/**
 * The observations a run carried over, each with when it was first received (epoch ms; NaN when a run before the
 * instants were kept remembered it), oldest first.
 */
export function carriedObservations(key: Pick<RoutedKey, 'seen' | 'seenAt'> | undefined): Array<[string, number]> {
  const seen = key?.seen ?? [];
  const seenAt = key?.seenAt ?? [];
  // seenAt is aligned with the end of seen: the instants a run before them did not keep are the oldest.
  const unknown = seen.length - seenAt.length;
  return seen.map((observation, i) => [observation, i < unknown ? Number.NaN : seenAt[i - unknown]!]);
}

/**
 * The fact an observation was, known only by its dedupe key and when it was received: its key, observation, source
 * and receipt (its subject is in the history of the run that took it).
 */
export function observedFact(factKey: string, observation: string, receivedMs: number): RoutedFact {
  const bar = observation.indexOf('|');
  return {
    factKey,
    observedAt: observation.slice(0, bar),
    source: observation.slice(bar + 1),
    receivedAt: new Date(receivedMs).toISOString(),
  };
}
