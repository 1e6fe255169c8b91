/**
 * When to try a model call again and how long to wait first: exponential backoff with full jitter
 * (a uniformly random wait up to the exponential bound, so many clients failing together do not
 * return together), unless the server said when to come back in `Retry-After`. Every model client waits
 * between attempts through {@link waitBeforeRetry}.
 */
import { LlmAbortedError } from './errors.js';

export interface BackoffOptions {
  /** Upper bound of the first wait. */
  initialMs: number;
  /** No wait bound grows past this. */
  maxMs: number;
  /** Growth of the bound from one retry to the next. */
  multiplier: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 8_000, multiplier: 2 };

/** 429 (and 408, a request timeout) and every 5xx may pass when tried again; other statuses will not. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 408 || status >= 500;
}

/** The full-jitter wait before retry number `retry` (1 for the first retry): in `[0, bound]`. */
export function backoffDelayMs(retry: number, backoff: BackoffOptions, random: () => number): number {
  const bound = Math.min(backoff.maxMs, backoff.initialMs * backoff.multiplier ** Math.max(0, retry - 1));
  return Math.floor(random() * bound);
}

/**
 * Milliseconds the server asks us to wait, from `retry-after-ms` (OpenAI's precise variant) or
 * `Retry-After` as delta-seconds or an HTTP date; undefined when absent or unreadable.
 */
export function parseRetryAfter(
  headers: { retryAfter?: string | undefined; retryAfterMs?: string | undefined },
  nowMs: number,
): number | undefined {
  const precise = parseNumber(headers.retryAfterMs);
  if (precise !== undefined) return Math.ceil(precise);
  const value = headers.retryAfter?.trim();
  if (!value) return undefined;
  const seconds = parseNumber(value);
  if (seconds !== undefined) return Math.ceil(seconds * 1000);
  // Only something that reads like a date is given to Date.parse, which accepts "-5" as a year.
  if (!/[a-z]/i.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

export interface RetryWait {
  /** 1 for the first retry. */
  retry: number;
  /** What the server asked for, if anything. */
  retryAfterMs: number | undefined;
  backoff: BackoffOptions;
  /** A server asking for longer than this gets this. */
  maxRetryAfterMs: number;
  random: () => number;
}

/** How long to wait before the next attempt: the server's word (capped) when given, else backoff. */
export function retryDelayMs(wait: RetryWait): number {
  if (wait.retryAfterMs !== undefined) return Math.min(wait.retryAfterMs, wait.maxRetryAfterMs);
  return backoffDelayMs(wait.retry, wait.backoff, wait.random);
}

export interface RetryWaitOptions extends RetryWait {
  /** Ends the wait early: the caller's abort (cancel, deadline). */
  signal: AbortSignal | undefined;
  /** Attempts made so far, for the error when the wait is aborted. */
  attempts: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Waits before the next attempt (see {@link retryDelayMs}); an abort during the wait ends it with
 * LlmAbortedError naming the attempts made. The one wait of every model client.
 */
export async function waitBeforeRetry(options: RetryWaitOptions): Promise<void> {
  const { signal, attempts, sleep } = options;
  try {
    await sleep(retryDelayMs(options), signal);
  } catch (error) {
    if (signal?.aborted) throw new LlmAbortedError(signal.reason, attempts, { cause: signal.reason });
    throw error;
  }
}

function parseNumber(value: string | undefined): number | undefined {
  const text = value?.trim();
  if (!text || !/^\d+(\.\d+)?$/.test(text)) return undefined;
  return Number(text);
}
