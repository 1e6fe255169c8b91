/** Nearest-rank percentiles of recovery samples, in milliseconds. */

export interface Spread {
  count: number;
  p50_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
}

/** The smallest sample that at least `p` per cent of the samples do not exceed; null when there is none. */
export function percentile(samples: readonly number[], p: number): number | null {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? null;
}

export function spread(samples: readonly number[]): Spread {
  return {
    count: samples.length,
    p50_ms: percentile(samples, 50),
    p99_ms: percentile(samples, 99),
    max_ms: samples.length === 0 ? null : Math.max(...samples),
  };
}
