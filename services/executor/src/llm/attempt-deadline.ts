/**
 * The clock of one HTTP attempt: an abort signal that fires when the caller aborts, when the whole
 * attempt (connect + complete answer) runs past its timeout, when no byte (no response headers) has come
 * within the first-byte timeout, or when a streamed answer goes quiet for longer than the idle timeout. It remembers which of those fired, so a timeout is never taken
 * for the caller's abort or the other way round.
 */

/** The abort reason of an attempt that ran out of time. */
export class AttemptTimeoutError extends Error {
  override readonly name = 'AttemptTimeoutError';
}

export class AttemptDeadline {
  private readonly controller = new AbortController();
  private readonly overallTimer: NodeJS.Timeout;
  private idleTimer: NodeJS.Timeout | undefined;
  private firstByteTimer: NodeJS.Timeout | undefined;
  private expiry: string | undefined;
  private readonly unlinkCaller: () => void;

  constructor(
    callerSignal: AbortSignal | undefined,
    timeoutMs: number,
    private readonly idleTimeoutMs: number | undefined,
    firstByteTimeoutMs?: number,
  ) {
    const onCallerAbort = (): void => this.controller.abort(callerSignal?.reason);
    callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    this.unlinkCaller = () => callerSignal?.removeEventListener('abort', onCallerAbort);
    this.overallTimer = setTimeout(() => this.expire(`no complete answer within ${timeoutMs} ms`), timeoutMs);
    if (firstByteTimeoutMs !== undefined && firstByteTimeoutMs < timeoutMs) {
      this.firstByteTimer = setTimeout(
        () => this.expire(`no first byte within ${firstByteTimeoutMs} ms`),
        firstByteTimeoutMs,
      );
    }
  }

  /** Aborts the attempt's HTTP request. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the attempt ran out of time, once it has. */
  get timedOut(): string | undefined {
    return this.expiry;
  }

  /** Bytes arrived: the idle clock starts over. */
  touch(): void {
    clearTimeout(this.firstByteTimer);
    if (this.idleTimeoutMs === undefined || this.expiry !== undefined) return;
    clearTimeout(this.idleTimer);
    const idleMs = this.idleTimeoutMs;
    this.idleTimer = setTimeout(() => this.expire(`no data for ${idleMs} ms`), idleMs);
  }

  dispose(): void {
    clearTimeout(this.overallTimer);
    clearTimeout(this.idleTimer);
    clearTimeout(this.firstByteTimer);
    this.unlinkCaller();
  }

  private expire(why: string): void {
    if (this.controller.signal.aborted) return;
    this.expiry = why;
    this.controller.abort(new AttemptTimeoutError(why));
  }
}
