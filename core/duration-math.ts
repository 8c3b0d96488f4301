/**
 * The pure half of core/duration.ts: the ISO 8601 duration pattern and its calendar arithmetic, with no import at
 * all, so that the zod schemas (and through them the client agent authors install) load no Temporal package.
 * core/duration.ts adds the ApplicationFailure that workflows need for a string that is no duration.
 */

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

/** The parts of `PnYnMnWnDTnHnMnS`; undefined for anything else. */
export function matchDuration(iso: string): DurationParts | undefined {
  const match = DURATION_PATTERN.exec(iso);
  if (!match) return undefined;
  const [, y, mo, w, d, h, mi, s] = match;
  return {
    years: num(y),
    months: num(mo),
    weeks: num(w),
    days: num(d),
    hours: num(h),
    minutes: num(mi),
    seconds: num(s),
  };
}

const DAY_MS = 86_400_000;

/** The exact part (weeks to seconds) in milliseconds, rounded to the millisecond. */
function exactMs(parts: DurationParts): number {
  return Math.round(
    parts.weeks * 7 * DAY_MS +
      parts.days * DAY_MS +
      parts.hours * 3_600_000 +
      parts.minutes * 60_000 +
      parts.seconds * 1000,
  );
}

/** The latest instant the watcher computes with: the end of year 9999, as far as RFC 3339 (and a search attribute) reaches. */
export const LATEST_INSTANT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** `instantMs` plus the duration: calendar years and months first (UTC), then the exact units. */
export function addDurationParts(instantMs: number, parts: DurationParts): number {
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
