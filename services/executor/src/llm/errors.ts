/**
 * Model-client errors: one class per condition, each with a protocol error code, whether the same
 * call may succeed later, and a detail naming the upstream status and the start of its body. The API
 * key never appears in a message or detail (bodies are scrubbed of it before they are kept).
 */
import { ErrorCode } from '@agentmesh/protocol';

export interface LlmErrorDetail {
  /** What went wrong, in a few words. */
  readonly reason: string;
  /** HTTP attempts made, including the last one. */
  readonly attempts: number;
  /** HTTP status of the last answer, when there was one. */
  readonly status?: number;
  /** The first characters of the last answer's body, when there was one. */
  readonly body?: string;
}

/** Common shape of the model client's errors, so the loop can catch them as one family. */
export abstract class LlmError extends Error {
  abstract readonly code: ErrorCode;
  abstract readonly retryable: boolean;

  constructor(
    message: string,
    readonly detail: LlmErrorDetail,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  get attempts(): number {
    return this.detail.attempts;
  }
}

/**
 * The model could not be reached or did not answer in full: retries exhausted on 429/5xx, refused or
 * reset connections, timeouts; or a stream that broke after text had already been handed out.
 */
export class LlmUnavailableError extends LlmError {
  override readonly name = 'LlmUnavailableError';
  readonly code = ErrorCode.LLM_UNAVAILABLE;
  readonly retryable = true;
}

/** The model answered, but with an error that retrying will not fix, or with something unreadable. */
export class LlmResponseError extends LlmError {
  override readonly name = 'LlmResponseError';
  readonly code = ErrorCode.LLM_ERROR;
  readonly retryable = false;
}

/**
 * The model endpoint is not an address the executor may reach: a private, loopback, link-local or metadata
 * address (as written, or as its host name resolves) that is not allow-listed, or a scheme other than
 * http(s). Nothing was sent, so the model key never left; retrying will not change the verdict.
 */
export class LlmEndpointDeniedError extends LlmError {
  override readonly name = 'LlmEndpointDeniedError';
  readonly code = ErrorCode.FORBIDDEN;
  readonly retryable = false;
}

/**
 * The caller's signal aborted the call. `reason` is the signal's reason; the code is
 * DEADLINE_EXCEEDED when that reason is a timeout (as from `AbortSignal.timeout`), else CANCELLED.
 */
export class LlmAbortedError extends LlmError {
  override readonly name = 'LlmAbortedError';
  readonly code: typeof ErrorCode.CANCELLED | typeof ErrorCode.DEADLINE_EXCEEDED;
  readonly retryable = false;

  constructor(
    readonly reason: unknown,
    attempts: number,
    options?: ErrorOptions,
  ) {
    const deadline = isTimeoutReason(reason);
    super(
      deadline ? 'model call aborted: deadline exceeded' : 'model call aborted',
      { reason: deadline ? 'deadline exceeded' : 'aborted', attempts },
      options,
    );
    this.code = deadline ? ErrorCode.DEADLINE_EXCEEDED : ErrorCode.CANCELLED;
  }
}

function isTimeoutReason(reason: unknown): boolean {
  return reason instanceof Error && reason.name === 'TimeoutError';
}
