/** Summaries of samples: nearest-rank percentiles and max, in the unit of the samples. */

export interface Summary {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** p50/p95/p99 (nearest rank) and max of the samples, rounded to `digits` decimals. */
export function summarise(samples: readonly number[], digits = 1): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (value: number | undefined) => Number((value ?? Number.NaN).toFixed(digits));
  const rank = (p: number) => round(sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]);
  return { count: sorted.length, p50: rank(50), p95: rank(95), p99: rank(99), max: round(sorted.at(-1)) };
}

/** a / b rounded to two decimals (NaN when b is zero). */
export const ratio = (a: number, b: number): number => (b === 0 ? Number.NaN : Number((a / b).toFixed(2)));

/** `used` spread over `items` (at least one), to two decimals; undefined when `used` is. */
export const perItem = (used: number | undefined, items: number): number | undefined =>
  used === undefined ? undefined : Number((used / Math.max(items, 1)).toFixed(2));
