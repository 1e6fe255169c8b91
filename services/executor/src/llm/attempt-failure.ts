/**
 * How one HTTP attempt at the model failed, before the client decides whether to try again: a
 * retryable failure (load, connection, timeout) or a final one (the server refused the request, or
 * answered something unreadable), with the upstream status and the start of its body.
 */
import type { LlmErrorDetail } from './errors.js';

export interface AttemptFailureInit {
  retryable: boolean;
  /** What went wrong, in a few words; already free of secrets. */
  reason: string;
  status?: number;
  /** Start of the answer body; already free of secrets. */
  body?: string;
  /** How long the server asked us to wait. */
  retryAfterMs?: number;
  cause?: unknown;
}

export class AttemptFailure extends Error {
  override readonly name = 'AttemptFailure';
  readonly retryable: boolean;
  readonly reason: string;
  readonly status: number | undefined;
  readonly body: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(init: AttemptFailureInit) {
    super(init.reason, init.cause === undefined ? undefined : { cause: init.cause });
    this.retryable = init.retryable;
    this.reason = init.reason;
    this.status = init.status;
    this.body = init.body;
    this.retryAfterMs = init.retryAfterMs;
  }

  detail(attempts: number, reason = this.reason): LlmErrorDetail {
    return {
      reason,
      attempts,
      ...(this.status === undefined ? {} : { status: this.status }),
      ...(this.body === undefined ? {} : { body: this.body }),
    };
  }
}

const EXCERPT_CHARS = 300;

/** The start of a quoted body or message, marked when cut. */
export function excerpt(text: string, maxChars = EXCERPT_CHARS): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}

// Errors undici raises for a request it could never send (our bug or bad configuration): no retry helps.
const CLIENT_MISUSE_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED', 'ERR_INVALID_URL']);

/** A failure of the connection itself: refused, reset, dropped, timed out. */
export function transportFailure(
  error: unknown,
  timedOut: string | undefined,
  phase: 'request' | 'response',
  scrub: (text: string) => string,
): AttemptFailure {
  if (timedOut !== undefined) {
    return new AttemptFailure({ retryable: true, reason: `timed out: ${timedOut}`, cause: error });
  }
  const what = describeError(error);
  if (CLIENT_MISUSE_CODES.has(errorCode(error) ?? '')) {
    return new AttemptFailure({
      retryable: false,
      reason: scrub(`the request could not be sent: ${what}`),
      cause: error,
    });
  }
  const where = phase === 'request' ? 'connection failed' : 'connection lost mid-response';
  return new AttemptFailure({ retryable: true, reason: scrub(`${where}: ${what}`), cause: error });
}

/** `TypeError: terminated (SocketError: other side closed)`: the error and what it says it came from. */
function describeError(error: unknown): string {
  const own = describeOne(error);
  const cause = error instanceof Error && error.cause !== undefined ? describeOne(error.cause) : undefined;
  return cause ? `${own} (${cause})` : own;
}

function describeOne(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = errorCode(error);
  const text = `${error.name}: ${error.message}`;
  return code && !text.includes(code) ? `${text} [${code}]` : text;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}
