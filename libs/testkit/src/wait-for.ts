/**
 * Bounded polling for tests: wait until a condition holds instead of sleeping for a guessed time.
 * A predicate that throws counts as "not yet"; its last error is kept as the timeout's cause, so a
 * test that never gets there says why.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  /** Give up after this long. Default 5 000 ms. */
  timeoutMs?: number;
  /** Pause between attempts. Default 25 ms. */
  intervalMs?: number;
  /** What is being waited for, used in the timeout message. */
  description?: string;
}

/** The condition did not hold within the bound. */
export class WaitForTimeoutError extends Error {
  override readonly name = 'WaitForTimeoutError';
  readonly code = 'DEADLINE_EXCEEDED';
  readonly retryable = false;

  constructor(description: string, timeoutMs: number, options?: ErrorOptions) {
    const reason = options?.cause instanceof Error ? `; last error: ${options.cause.message}` : '';
    super(`timed out after ${timeoutMs} ms waiting for ${description}${reason}`, options);
  }
}

const notYet = Symbol('not yet');

/**
 * Calls `predicate` until it returns a truthy value and resolves with that value. An attempt that is
 * still running when the bound expires does not hold the caller: the wait fails at the bound.
 */
export async function waitFor<T>(
  predicate: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<Exclude<T, false | 0 | '' | null | undefined>> {
  const { timeoutMs = 5_000, intervalMs = 25, description = 'a condition' } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) break;
    const attempt = await raceWithTimer(predicate, remaining).catch((error: unknown) => {
      lastError = error;
      return notYet;
    });
    if (attempt !== notYet && attempt) return attempt as Exclude<T, false | 0 | '' | null | undefined>;
    const pause = Math.min(intervalMs, deadline - Date.now());
    if (pause <= 0) break;
    await sleep(pause);
  }
  throw new WaitForTimeoutError(
    description,
    timeoutMs,
    lastError === undefined ? undefined : { cause: lastError },
  );
}

async function raceWithTimer<T>(predicate: () => T | Promise<T>, ms: number): Promise<T | typeof notYet> {
  const timer = new AbortController();
  try {
    const expired = sleep(ms, undefined, { signal: timer.signal }).then(
      (): typeof notYet => notYet,
      (): typeof notYet => notYet,
    );
    return await Promise.race([Promise.resolve().then(predicate), expired]);
  } finally {
    timer.abort();
  }
}
