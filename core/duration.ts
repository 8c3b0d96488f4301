/**
 * ISO 8601 duration arithmetic for workflows and the bridge alike: pure, deterministic, no Node APIs.
 * Years and months are calendar steps in UTC (the day of month is clamped: Jan 31 + P1M = Feb 28/29);
 * weeks, days, hours, minutes and seconds are exact (a UTC day is always 24 h), seconds may be fractional.
 * The arithmetic is in duration-math.ts (no imports); this file adds the failure workflows throw on a bad string.
 */
import { ApplicationFailure } from '@temporalio/common';
import { addDurationParts, LATEST_INSTANT_MS, matchDuration, type DurationParts } from './duration-math.js';
import { INVALID_DURATION } from './failures.js';

export { DURATION_PATTERN, LATEST_INSTANT_MS, type DurationParts } from './duration-math.js';

/** Parses `PnYnMnWnDTnHnMnS`; throws a non-retryable ApplicationFailure on anything else. */
export function parseDuration(iso: string): DurationParts {
  const parts = matchDuration(iso);
  if (!parts) {
    throw ApplicationFailure.create({
      type: INVALID_DURATION,
      message: `not an ISO 8601 duration: ${JSON.stringify(iso)}`,
      nonRetryable: true,
    });
  }
  return parts;
}

/**
 * `instantMs` plus the duration, never past LATEST_INSTANT_MS: a deadline the workflow computes (an anchor's observation
 * plus its offset, a due time plus grace) is one it can store, upsert and sleep towards, however far the sum runs.
 */
export function addDurationBounded(instantMs: number, iso: string): number {
  const ms = addDuration(instantMs, iso);
  return Number.isFinite(ms) ? Math.min(ms, LATEST_INSTANT_MS) : LATEST_INSTANT_MS;
}

/** `instantMs` plus the duration: calendar years and months first (UTC), then the exact units. */
export function addDuration(instantMs: number, iso: string): number {
  return addDurationParts(instantMs, parseDuration(iso));
}

/** True when the duration is zero (`P0D`, `PT0S`, ...). */
export function isZeroDuration(iso: string): boolean {
  const parts = parseDuration(iso);
  return Object.values(parts).every((value) => value === 0);
}

/** `addDuration` on ISO instants: the result as `Date.toISOString()`. */
export function addDurationIso(instantIso: string, iso: string): string {
  return new Date(addDuration(Date.parse(instantIso), iso)).toISOString();
}
