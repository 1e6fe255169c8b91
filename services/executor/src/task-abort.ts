/**
 * Why a running task stops early, carried as the reason of its AbortSignal. Cancel and deadline end the
 * task (its terminal event says so); a stopping executor, a lost event stream and a task taken over while
 * the executor stood still only end this attempt: the task is handed back to JetStream, or left to the
 * attempt that owns it now.
 */
import { ErrorCode } from '@agentmesh/protocol';

export const AbortCause = {
  CANCELLED: 'cancelled',
  DEADLINE_EXCEEDED: 'deadline_exceeded',
  EXECUTOR_STOPPING: 'executor_stopping',
  EVENT_STREAM_LOST: 'event_stream_lost',
  /** The executor stood still past ack_wait and another attempt owns the task now (heartbeat-clock.ts). */
  SUPERSEDED: 'superseded',
} as const;
export type AbortCause = (typeof AbortCause)[keyof typeof AbortCause];

export class TaskAbortReason extends Error {
  override readonly name = 'TaskAbortReason';

  constructor(
    readonly kind: AbortCause,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** Whether the task itself is over (its terminal event reports this reason). */
  get endsTask(): boolean {
    return this.kind === AbortCause.CANCELLED || this.kind === AbortCause.DEADLINE_EXCEEDED;
  }
}

/** The terminal error a task that was stopped for `reason` ends with. */
export function abortError(reason: unknown): { code: ErrorCode; message: string; retryable: false } {
  if (reason instanceof TaskAbortReason && reason.kind === AbortCause.DEADLINE_EXCEEDED) {
    return { code: ErrorCode.DEADLINE_EXCEEDED, message: reason.message, retryable: false };
  }
  const message = reason instanceof TaskAbortReason ? reason.message : 'the task was cancelled';
  return { code: ErrorCode.CANCELLED, message, retryable: false };
}

/**
 * The abort controller of one task attempt, with its deadline armed. The first reason wins: a task that
 * ran past its deadline stays DEADLINE_EXCEEDED even if a cancel arrives afterwards.
 */
export class TaskAbort {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout | undefined;

  /** `deadlineAt`: epoch ms after which the attempt is aborted with DEADLINE_EXCEEDED. */
  constructor(
    readonly deadlineAt?: number,
    now: () => number = Date.now,
  ) {
    if (deadlineAt === undefined) return;
    const remaining = deadlineAt - now();
    if (remaining <= 0)
      this.#abort(AbortCause.DEADLINE_EXCEEDED, 'the task deadline had passed before it started');
    else {
      this.#timer = setTimeout(
        () => this.#abort(AbortCause.DEADLINE_EXCEEDED, 'the task did not finish before its deadline'),
        remaining,
      );
    }
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The reason the attempt was aborted, if it was. */
  get reason(): TaskAbortReason | undefined {
    return this.#controller.signal.aborted ? (this.#controller.signal.reason as TaskAbortReason) : undefined;
  }

  cancel(why?: string): void {
    this.#abort(AbortCause.CANCELLED, why ? `the task was cancelled: ${why}` : 'the task was cancelled');
  }

  handBack(): void {
    this.#abort(AbortCause.EXECUTOR_STOPPING, 'the executor is stopping; the task goes back to the queue');
  }

  loseEventStream(cause: unknown): void {
    this.#abort(AbortCause.EVENT_STREAM_LOST, 'the task event stream could not be written', cause);
  }

  loseOwnership(): void {
    this.#abort(AbortCause.SUPERSEDED, 'another attempt took the task over while this executor stood still');
  }

  /** Stops the deadline timer; call when the attempt is over. */
  dispose(): void {
    clearTimeout(this.#timer);
  }

  #abort(cause: AbortCause, message: string, origin?: unknown): void {
    if (this.#controller.signal.aborted) return;
    clearTimeout(this.#timer);
    this.#controller.abort(
      new TaskAbortReason(cause, message, origin === undefined ? undefined : { cause: origin }),
    );
  }
}
