/**
 * What the statistics may spend of the visibility store, whose rate limit every tenant shares: one computation per
 * filter at a time and cached, a few at once, a few per principal per minute (docs/api.md, "GET /v1/statistics").
 */
import { addDurationParts, matchDuration } from '../../core/duration-math.js';
import { BridgeBusyError, QuotaExceededError } from './errors.js';
import { refill, type Bucket } from './quotas.js';

/** How long one answer is reused for the same filters. */
export const CACHE_MS = 30_000;
/** How old the figures a raise's warning is given may be: the warnings read a week, so minutes change nothing. */
export const KNOWN_MS = 15 * 60_000;
/** Computations at once, over every principal. */
export const MAX_COMPUTATIONS = 4;
/** Of those, the ones a raise's warning may start (the others are left to reads). */
export const BACKGROUND_COMPUTATIONS = 2;
/** Computations one principal may start per minute (its reads and its raises' warnings together). */
export const COMPUTATIONS_PER_MINUTE = 20;
/** How long a read waits for one of MAX_COMPUTATIONS before it is answered 503 with Retry-After. */
export const SLOT_WAIT_MS = 10_000;
/** Filters remembered at most: the oldest is forgotten past it. */
const MAX_ENTRIES = 1_000;
const MINUTE_MS = 60_000;

/** The filters of one computation; `window` an ISO 8601 duration that matchDuration reads. */
export interface Filters {
  kind?: string;
  agent?: string;
  window: string;
}

/** What the cache may spend; the defaults are the constants above (tests shrink them). */
export interface StatisticsBudget {
  maxComputations: number;
  backgroundComputations: number;
  perPrincipalPerMinute: number;
  slotWaitMs: number;
}

export const DEFAULT_STATISTICS_BUDGET: StatisticsBudget = {
  maxComputations: MAX_COMPUTATIONS,
  backgroundComputations: BACKGROUND_COMPUTATIONS,
  perPrincipalPerMinute: COMPUTATIONS_PER_MINUTE,
  slotWaitMs: SLOT_WAIT_MS,
};

/**
 * The window as the span it steps back: calendar months (years as twelve) and the exact rest in milliseconds, so that
 * every spelling of one span names one cache entry.
 */
export function windowKey(window: string): string {
  const parts = matchDuration(window);
  if (!parts) return window;
  const months = parts.years * 12 + parts.months;
  const exactMs = addDurationParts(0, { ...parts, years: 0, months: 0 });
  return `${months}M${exactMs}ms`;
}

const keyOf = (filters: Filters): string => JSON.stringify([filters.kind, filters.agent, windowKey(filters.window)]);

interface Entry<T> {
  /** The latest answer, and when it was computed. */
  value?: T;
  atMs: number;
  /** The computation under way, if any. */
  pending?: Promise<T>;
}

/** At most `max` holders; a waiter is served in order, or gives up after its wait. */
function createSlots(max: number) {
  let held = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else held--;
  };
  /** A place now if fewer than `below` are held, else undefined. Its release is the function returned. */
  const tryTake = (below = max): (() => void) | undefined => {
    if (held >= Math.min(below, max)) return undefined;
    held++;
    return release;
  };
  /** A place, waiting up to `waitMs` for one (handed over by a release, in order); undefined when none came. */
  const take = (waitMs: number): Promise<(() => void) | undefined> => {
    const now = tryTake();
    if (now) return Promise.resolve(now);
    return new Promise((resolve) => {
      const grant = () => {
        clearTimeout(timer);
        resolve(release);
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(grant), 1);
        resolve(undefined);
      }, waitMs);
      waiting.push(grant);
    });
  };
  return { tryTake, take };
}

/** Token buckets by principal: a burst of the whole quota, then one token every minute / quota. */
function createBuckets(now: () => number, perMinute: number) {
  const buckets = new Map<string, Bucket>();
  /** The principal's tokens, refilled up to now. */
  return function bucketOf(principalId: string) {
    const found = refill(buckets.get(principalId), perMinute, MINUTE_MS, now());
    buckets.set(principalId, found);
    return found;
  };
}

/** The refusal of a read whose principal has `tokens` (below one) of its `limit` per minute left. */
function quotaExceeded(principalId: string, tokens: number, limit: number): QuotaExceededError {
  const retryAfter = Math.max(1, Math.ceil(((1 - tokens) * MINUTE_MS) / limit / 1000));
  return new QuotaExceededError(
    `quota statistics-per-minute: principal '${principalId}' may start at most ${limit} statistics computations per minute (an answer reused from the last ${CACHE_MS / 1000} s costs none); one more fits in ${retryAfter} s`,
    'statistics-per-minute',
    limit,
    retryAfter,
  );
}

/** The entry of `key` in `entries`, made if missing; past MAX_ENTRIES the oldest is forgotten. */
function entryOf<T>(entries: Map<string, Entry<T>>, key: string): Entry<T> {
  let entry = entries.get(key);
  if (!entry) {
    entries.set(key, (entry = { atMs: 0 }));
    if (entries.size > MAX_ENTRIES) entries.delete(entries.keys().next().value!);
  }
  return entry;
}

/**
 * Runs `compute` into `entry` once a place is had (a BridgeBusyError naming `bound` when none came); a failed one
 * keeps the answer before it, if any, as not fresh.
 */
function startComputation<T>(
  entry: Entry<T>,
  compute: () => Promise<T>,
  place: Promise<(() => void) | undefined>,
  now: () => number,
  bound: number,
): Promise<T> {
  const run = (async () => {
    const release = await place;
    if (!release) {
      throw new BridgeBusyError(
        `the bridge is computing ${bound} statistics, its bound (they read the namespace's visibility store); nothing was done, send it again after Retry-After`,
      );
    }
    try {
      const value = await compute();
      Object.assign(entry, { value, atMs: now() });
      return value;
    } finally {
      release();
    }
  })().finally(() => {
    entry.pending = undefined;
  });
  entry.pending = run;
  return run;
}

/** A cache of computations of `T` by filters, within `budget`; `compute` makes the visibility reads. */
export function createStatisticsCache<T>(
  compute: (filters: Filters) => Promise<T>,
  options: { now?: () => number; budget?: Partial<StatisticsBudget> } = {},
) {
  const now = options.now ?? Date.now;
  const budget = { ...DEFAULT_STATISTICS_BUDGET, ...options.budget };
  const entries = new Map<string, Entry<T>>();
  const slots = createSlots(budget.maxComputations);
  const bucketOf = createBuckets(now, budget.perPrincipalPerMinute);

  const start = (key: string, filters: Filters, place: Promise<(() => void) | undefined>): Promise<T> =>
    startComputation(entryOf(entries, key), () => compute(filters), place, now, budget.maxComputations);

  const fresh = (entry: Entry<T> | undefined): entry is Entry<T> & { value: T } =>
    entry?.value !== undefined && now() - entry.atMs < CACHE_MS;

  return {
    /**
     * The answer for `filters`: reused when fresh or under way, else computed for `principalId` (a QuotaExceededError
     * past its computations per minute, a BridgeBusyError when no place frees within the wait).
     */
    read(principalId: string, filters: Filters): Promise<T> {
      const key = keyOf(filters);
      const found = entries.get(key);
      if (fresh(found)) return Promise.resolve(found.value);
      if (found?.pending) return found.pending;
      const bucket = bucketOf(principalId);
      if (bucket.tokens < 1) throw quotaExceeded(principalId, bucket.tokens, budget.perPrincipalPerMinute);
      bucket.tokens -= 1;
      return start(key, filters, slots.take(budget.slotWaitMs));
    },

    /**
     * What is known for `filters` without waiting: the latest answer up to KNOWN_MS old, or undefined. When it is not
     * fresh, a computation is started in the background for `principalId` if a background place is free and its
     * bucket allows; nothing is refused.
     */
    known(principalId: string, filters: Filters): T | undefined {
      const key = keyOf(filters);
      const found = entries.get(key);
      if (!fresh(found) && !found?.pending) {
        const bucket = bucketOf(principalId);
        const release = bucket.tokens >= 1 ? slots.tryTake(budget.backgroundComputations) : undefined;
        if (release) {
          bucket.tokens -= 1;
          start(key, filters, Promise.resolve(release)).catch(() => undefined);
        }
      }
      return found?.value !== undefined && now() - found.atMs < KNOWN_MS ? found.value : undefined;
    },
  };
}
