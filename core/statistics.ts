/**
 * What a kind actually does: how an expectation ended and how long its subject took, read the same way by the
 * worker (its metrics, when an expectation closes) and by the bridge (`GET /v1/statistics`, from the memos).
 * Pure, deterministic, no Node APIs: the workflows import it.
 */
import type { ExpectationRecord } from './schemas/record.js';

/** How a closed (or lapsed) expectation ended, as the metrics label it. */
export type Outcome = 'satisfied_on_time' | 'satisfied_late' | 'withdrawn' | 'lapsed';

export interface Figures {
  kind: string;
  outcome: Outcome | 'open';
  /** The latest lapse's type, for a lapsed one. */
  lapse?: string;
  /** From the raise to the satisfying fact's observedAt (never below 0: a fact may precede the raise). */
  timeToSatisfySeconds?: number;
  /** The satisfying fact's observedAt minus the dueAt it was held against: negative is early. */
  relativeToDueSeconds?: number;
}

const seconds = (fromIso: string, toIso: string) => (Date.parse(toIso) - Date.parse(fromIso)) / 1000;

/** The figures of one record, open or closed. */
export function figuresOf(record: ExpectationRecord): Figures {
  const kind = record.expectation.kind;
  switch (record.state) {
    case 'satisfied': {
      const observedAt = record.observedAt ?? record.satisfiedAt ?? record.raisedAt;
      return {
        kind,
        outcome: record.late ? 'satisfied_late' : 'satisfied_on_time',
        timeToSatisfySeconds: Math.max(0, seconds(record.raisedAt, observedAt)),
        relativeToDueSeconds: seconds(record.dueAt, observedAt),
      };
    }
    case 'withdrawn':
      return { kind, outcome: 'withdrawn' };
    case 'lapsed':
      return { kind, outcome: 'lapsed', ...(record.lapse ? { lapse: record.lapse.lapse } : {}) };
    default:
      return { kind, outcome: 'open' };
  }
}

/**
 * Bucket bounds of the worker's histograms, in seconds: a second to a quarter. Its meter takes no negative value, so
 * satisfaction against dueAt is two histograms (early by, late by), each of a magnitude.
 */
export const SECONDS_BUCKETS = [
  1, 10, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800, 345600, 604800, 1209600, 2592000, 7776000,
];

/** The q-quantile (0..1) of ascending `sorted` by the nearest rank; undefined for none. */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1];
}
