/**
 * Start-up through a NATS outage: a service whose start-up talks to JetStream (stream, bucket and
 * consumer look-ups and creation) may meet a cluster that is electing a meta leader after losing a
 * member, or a server that is paused or restarting. Those failures pass; start-up is tried again with
 * backoff until a bound, so a service restarted during the outage comes up once the cluster has
 * recovered instead of exiting. Any other failure (a refused permission, bad configuration, a port in
 * use) ends start-up at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** JetStream API error codes that say "the cluster cannot answer right now", not "no". */
const TRANSIENT_JETSTREAM_CODES = new Set([
  // JSClusterNotAvailErr: "JetStream system temporarily unavailable" (no meta leader yet).
  10008,
]);

/** nats.js error names (their classes may exist twice in a tree, so names rather than instanceof). */
const TRANSIENT_ERROR_NAMES = new Set([
  // A request nobody answered in time: a paused or partitioned server, a meta leader being elected.
  'TimeoutError',
  // No JetStream responder on the subject: the server's JetStream is not up yet.
  'NoResponders',
  'NoRespondersError',
  // What nats.js makes of no responders on the JetStream API; on a restarting server it passes.
  'JetStreamNotEnabled',
]);

/** JetStreamNotEnabledForAccount: the account has no JetStream at all, a configuration error. */
const JETSTREAM_NOT_ENABLED_FOR_ACCOUNT = 10039;

/**
 * Whether `error` (or an error in its `cause` chain) is one that a recovering NATS cluster produces and
 * that a later attempt may not meet. A permission violation or an account without JetStream anywhere in
 * the chain is never transient.
 */
export function isTransientNatsError(error: unknown): boolean {
  let transient = false;
  const seen = new Set<unknown>();
  for (let current: unknown = error; current && !seen.has(current);) {
    seen.add(current);
    const { name, code, cause } = current as { name?: unknown; code?: unknown; cause?: unknown };
    if (name === 'PermissionViolationError' || name === 'AuthorizationError') return false;
    if (code === JETSTREAM_NOT_ENABLED_FOR_ACCOUNT) return false;
    if (typeof name === 'string' && TRANSIENT_ERROR_NAMES.has(name)) transient = true;
    if (name === 'JetStreamApiError' && typeof code === 'number' && TRANSIENT_JETSTREAM_CODES.has(code))
      transient = true;
    current = cause;
  }
  return transient;
}

/** Start-up kept failing with transient errors for longer than its bound. */
export class StartupTimeoutError extends Error {
  override readonly name = 'StartupTimeoutError';
  constructor(
    readonly waitedMs: number,
    readonly attempts: number,
    options: { cause: unknown },
  ) {
    super(
      `start-up did not succeed within ${waitedMs} ms (${attempts} attempts): NATS/JetStream stayed unavailable ` +
        '(raise STARTUP_TIMEOUT_MS to wait longer)',
      options,
    );
  }
}

export interface StartupWait {
  /** The attempt that failed (1-based). */
  attempt: number;
  error: unknown;
  /** Pause before the next attempt. */
  delayMs: number;
  /** Time since the first attempt began. */
  waitedMs: number;
}

export interface StartupRetryOptions {
  /** Bound on the whole start-up; after it the last error is rethrown as {@link StartupTimeoutError}. */
  timeoutMs: number;
  /** First pause; it doubles up to `maxDelayMs`. Default 500 ms. */
  initialDelayMs?: number;
  /** Default 5 000 ms. */
  maxDelayMs?: number;
  /** Told before each pause. */
  onWait?: (wait: StartupWait) => void;
  /** Ends the wait at once (the call rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Decides which failures are worth another attempt. Default {@link isTransientNatsError}. */
  isTransient?: (error: unknown) => boolean;
}

/**
 * Runs `attempt` until it resolves, a failure is not transient (rethrown as it is), or `timeoutMs` has
 * passed. `attempt` must leave nothing running when it throws, since it runs again from the start.
 */
export async function retryStartup<T>(attempt: () => Promise<T>, options: StartupRetryOptions): Promise<T> {
  const isTransient = options.isTransient ?? isTransientNatsError;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const started = Date.now();
  let delayMs = options.initialDelayMs ?? 500;
  for (let attempts = 1; ; attempts += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (!isTransient(error)) throw error;
      const waitedMs = Date.now() - started;
      if (waitedMs + delayMs > options.timeoutMs) {
        throw new StartupTimeoutError(waitedMs, attempts, { cause: error });
      }
      options.onWait?.({ attempt: attempts, error, delayMs, waitedMs });
      await sleep(delayMs, undefined, options.signal ? { signal: options.signal } : {});
      delayMs = Math.min(delayMs * 2, maxDelayMs);
    }
  }
}
