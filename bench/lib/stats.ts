/**
 * Summaries of samples: nearest-rank percentiles and max, in the unit of the samples.
 */

export interface Summary {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** The nearest-rank percentile `p` (0–100) of sorted samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** p50/p95/p99/max of the samples, rounded to `digits` decimals. */
export function summarise(samples: readonly number[], digits = 1): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (value: number) => Number(value.toFixed(digits));
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? Number.NaN),
  };
}

/** a / b rounded to two decimals (NaN when b is zero). */
export const ratio = (a: number, b: number): number => (b === 0 ? Number.NaN : Number((a / b).toFixed(2)));
