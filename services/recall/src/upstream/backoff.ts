/**
 * Delay before the next attempt of an idempotent upstream call: exponential with "full jitter" (a random
 * delay between zero and the exponential bound), so that instances retrying after the same outage spread
 * out instead of hitting the upstream together.
 */

export const BACKOFF_BASE_MS = 100;
export const BACKOFF_MAX_MS = 2_000;

/** Delay after failed attempt number `attempt` (1-based); `random` returns a value in [0, 1). */
export function backoffDelayMs(attempt: number, random: () => number = Math.random): number {
  const bound = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * bound);
}
