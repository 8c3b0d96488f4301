/**
 * ISO 8601 duration arithmetic for workflows and the bridge alike: pure, deterministic, no Node APIs.
 * Years and months are calendar steps in UTC (the day of month is clamped: Jan 31 + P1M = Feb 28/29);
 * weeks, days, hours, minutes and seconds are exact (a UTC day is always 24 h), seconds may be fractional.
 */
import { ApplicationFailure } from '@temporalio/common';
import { INVALID_DURATION } from './failures.js';

/** The parts of a parsed duration. Only `seconds` (and the exact units) may be fractional. */
export interface DurationParts {
  years: number;
  months: number;
  weeks: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

/** `PnYnMnWnDTnHnMnS`, every part optional but at least one present; only W, D, H, M, S may be fractional. */
export const DURATION_PATTERN =
  /^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?!$)(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/;

const num = (text: string | undefined): number => (text === undefined ? 0 : Number(text.replace(',', '.')));

/** Parses `PnYnMnWnDTnHnMnS`; throws a non-retryable ApplicationFailure on anything else. */
export function parseDuration(iso: string): DurationParts {
  const match = DURATION_PATTERN.exec(iso);
  if (!match) {
    throw ApplicationFailure.create({
      type: INVALID_DURATION,
      message: `not an ISO 8601 duration: ${JSON.stringify(iso)}`,
      nonRetryable: true,
    });
  }
  const [, y, mo, w, d, h, mi, s] = match;
  return { years: num(y), months: num(mo), weeks: num(w), days: num(d), hours: num(h), minutes: num(mi), seconds: num(s) };
}

const DAY_MS = 86_400_000;

/** The exact part (weeks to seconds) in milliseconds, rounded to the millisecond. */
function exactMs(parts: DurationParts): number {
  return Math.round(
    parts.weeks * 7 * DAY_MS + parts.days * DAY_MS + parts.hours * 3_600_000 + parts.minutes * 60_000 + parts.seconds * 1000,
  );
}

/** `instantMs` plus the duration: calendar years and months first (UTC), then the exact units. */
export function addDuration(instantMs: number, iso: string): number {
  const parts = parseDuration(iso);
  let result = instantMs;
  const calendarMonths = parts.years * 12 + parts.months;
  if (calendarMonths !== 0) {
    const date = new Date(instantMs);
    const totalMonths = date.getUTCFullYear() * 12 + date.getUTCMonth() + calendarMonths;
    const year = Math.floor(totalMonths / 12);
    const month = totalMonths - year * 12;
    const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    const day = Math.min(date.getUTCDate(), lastDay);
    const timeOfDay = instantMs - Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
    result = Date.UTC(year, month, day) + timeOfDay;
  }
  return result + exactMs(parts);
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
