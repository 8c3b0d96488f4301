/**
 * Per-principal quotas: raises and facts per minute (buckets in the bridge's memory) and open expectations (counted
 * in the visibility store); a refused request is a QuotaExceededError (429) and nothing of it is applied
 * (docs/api.md, "Quotas").
 */
import type { Principal } from '../auth/principals.js';
import { QuotaExceededError, type QuotaName } from './errors.js';

/** The quotas a deployment sets (WATCHER_QUOTA_*); 0 turns one off. */
export interface QuotaSettings {
  /** Open expectations per principal. */
  openExpectations: number;
  /** Expectation items per principal per window. */
  raisesPerMinute: number;
  /** Fact items per principal per window. */
  factsPerMinute: number;
  /** The window the per-minute quotas refill over: a minute (tests shorten it). */
  windowMs?: number;
  /** How long one count of a principal's open expectations is reused; also the 429's Retry-After for that quota. */
  openCountCacheMs?: number;
}

export const DEFAULT_WINDOW_MS = 60_000;
export const DEFAULT_OPEN_COUNT_CACHE_MS = 5_000;

export interface QuotaDeps {
  settings: QuotaSettings;
  /** How many open expectations the principal has (a visibility count). */
  countOpen(principalId: string): Promise<number>;
  /** The bridge's clock (epoch ms); injected so a test can move it. */
  now?: () => number;
}

export interface Bucket {
  tokens: number;
  at: number;
}

/** A token bucket of `limit` tokens a window, full when new, refilled up to the instant `t`. */
export function refill(bucket: Bucket | undefined, limit: number, windowMs: number, t: number): Bucket {
  const found = bucket ?? { tokens: limit, at: t };
  found.tokens = Math.min(limit, found.tokens + ((t - found.at) * limit) / windowMs);
  found.at = t;
  return found;
}

const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** "minute" for the usual window, "10 s" for another. */
const windowText = (windowMs: number): string => (windowMs === DEFAULT_WINDOW_MS ? 'minute' : `${windowMs / 1000} s`);

/** The quota checks of one bridge. */
export function createQuotas(deps: QuotaDeps) {
  const now = deps.now ?? Date.now;
  const windowMs = deps.settings.windowMs ?? DEFAULT_WINDOW_MS;
  const cacheMs = deps.settings.openCountCacheMs ?? DEFAULT_OPEN_COUNT_CACHE_MS;
  const buckets = new Map<string, Bucket>();
  const openCounts = new Map<string, { count: number; at: number }>();

  /** The principal's bucket for a quota, refilled up to now. */
  function bucket(quota: QuotaName, principalId: string, limit: number): Bucket {
    const key = `${quota}\u0000${principalId}`;
    const found = refill(buckets.get(key), limit, windowMs, now());
    buckets.set(key, found);
    return found;
  }

  /** The refusal when `wanted` items do not fit the bucket now, or nothing when they do (nothing is taken). */
  function refusal(quota: QuotaName, principal: Principal, limit: number, wanted: number, noun: string) {
    if (limit === 0 || wanted === 0) return undefined;
    const { tokens } = bucket(quota, principal.id, limit);
    if (wanted <= tokens) return undefined;
    const per = `at most ${limit} ${noun} per ${windowText(windowMs)}`;
    if (wanted > limit) {
      const message = `quota ${quota}: principal '${principal.id}' may send ${per}, and this request alone carries ${wanted}: split it`;
      return new QuotaExceededError(message, quota, limit, seconds(windowMs));
    }
    const retryAfter = seconds(((wanted - tokens) * windowMs) / limit);
    const message = `quota ${quota}: principal '${principal.id}' may send ${per}; this request carries ${wanted}, which fit again in ${retryAfter} s`;
    return new QuotaExceededError(message, quota, limit, retryAfter);
  }

  return {
    /**
     * Takes the request's expectation and fact items from the principal's per-minute quotas, or throws
     * QuotaExceededError and takes nothing.
     */
    takeRates(principal: Principal, items: { raises: number; facts: number }): void {
      const { raisesPerMinute, factsPerMinute } = deps.settings;
      const refused =
        refusal('raises-per-minute', principal, raisesPerMinute, items.raises, 'expectations') ??
        refusal('facts-per-minute', principal, factsPerMinute, items.facts, 'facts');
      if (refused) throw refused;
      if (raisesPerMinute > 0) bucket('raises-per-minute', principal.id, raisesPerMinute).tokens -= items.raises;
      if (factsPerMinute > 0) bucket('facts-per-minute', principal.id, factsPerMinute).tokens -= items.facts;
    },

    /** Throws QuotaExceededError when `adding` more open expectations would put the principal over its quota. */
    async checkOpen(principal: Principal, adding: number): Promise<void> {
      const limit = deps.settings.openExpectations;
      if (limit === 0 || adding <= 0) return;
      const t = now();
      let cached = openCounts.get(principal.id);
      if (!cached || t - cached.at >= cacheMs) {
        cached = { count: await deps.countOpen(principal.id), at: t };
        openCounts.set(principal.id, cached);
      }
      if (cached.count + adding <= limit) return;
      const message =
        `quota open-expectations: principal '${principal.id}' may have at most ${limit} open expectations and has ` +
        `${cached.count} (as the visibility store counts them, eventually consistent); this request raises ${adding} more: ` +
        'withdraw some, or wait for some to be satisfied or to close';
      throw new QuotaExceededError(message, 'open-expectations', limit, seconds(cacheMs));
    },

    /** Counts raises made now into the principal's reused open count, until the store is asked again. */
    raised(principal: Principal, count: number): void {
      const cached = openCounts.get(principal.id);
      if (cached) cached.count += count;
    },
  };
}

export type Quotas = ReturnType<typeof createQuotas>;
