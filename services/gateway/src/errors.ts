/**
 * How the gateway says no. Expected failures are returned as a {@link Rejection} (one class per
 * condition, each with a protocol code) and turned into the one error body `{code, message, detail}`
 * with the code's HTTP status — or, for refusals HTTP has a status of its own for (414, 415, 431, ...),
 * that status with the code INVALID_REQUEST. `http-error-replies.ts` maps Fastify's and Node's own
 * failures onto these classes.
 */
import {
  ErrorCode,
  errorBody,
  httpStatusOf,
  isRetryableByDefault,
  zodErrorBody,
  type ErrorBody,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import type { FastifyReply } from 'fastify';
import type { z } from 'zod';

export class Rejection extends Error {
  override readonly name: string = 'Rejection';

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly detail?: unknown,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  get retryable(): boolean {
    return isRetryableByDefault(this.code);
  }

  get httpStatus(): number {
    return httpStatusOf(this.code);
  }

  /** Response headers that go with the rejection (`Retry-After`, ...). */
  get headers(): Readonly<Record<string, string>> {
    return {};
  }

  toBody(): ErrorBody {
    return errorBody(this.code, this.message, this.detail);
  }
}

/** A request HTTP has a status of its own for: code INVALID_REQUEST, answered with that status. */
abstract class HttpRefusal extends Rejection {
  protected abstract readonly status: number;

  constructor(message: string, detail?: unknown) {
    super(ErrorCode.INVALID_REQUEST, message, detail);
  }

  override get httpStatus(): number {
    return this.status;
  }
}

export class InvalidRequest extends Rejection {
  override readonly name = 'InvalidRequest';
  constructor(message: string, detail?: unknown) {
    super(ErrorCode.INVALID_REQUEST, message, detail);
  }

  /** A zod rejection, with the offending paths in the message and `detail.issues`. */
  static fromZod(error: z.ZodError, where?: string): InvalidRequest {
    const body = zodErrorBody(error);
    return new InvalidRequest(where ? `${where}: ${body.message}` : body.message, body.detail);
  }
}

/** The challenge every 401 carries (RFC 6750), on every route that takes a key. */
export const BEARER_CHALLENGE = 'Bearer realm="agentmesh"';

export class Unauthorized extends Rejection {
  override readonly name = 'Unauthorized';
  constructor(message: string) {
    super(ErrorCode.UNAUTHORIZED, message);
  }

  /**
   * HTTP requires a challenge with 401; without one, MCP clients (the Inspector, the SDKs) take the 401
   * for an OAuth server's and start an OAuth flow instead of reporting a wrong key.
   */
  override get headers(): Readonly<Record<string, string>> {
    return { 'www-authenticate': BEARER_CHALLENGE };
  }
}

export class Forbidden extends Rejection {
  override readonly name = 'Forbidden';
  constructor(message: string) {
    super(ErrorCode.FORBIDDEN, message);
  }
}

export class NotFound extends Rejection {
  override readonly name = 'NotFound';
  constructor(message: string) {
    super(ErrorCode.NOT_FOUND, message);
  }
}

/** A task naming a workflow that is no agent of its account nor of the shared catalogue. */
export class UnknownWorkflow extends Rejection {
  override readonly name = 'UnknownWorkflow';
  constructor(accountId: string, workflowId: string) {
    super(
      ErrorCode.NOT_FOUND,
      `no agent has the workflow_id "${workflowId}" in account ${accountId} or the shared catalogue`,
      { workflow_id: workflowId, account_id: accountId },
    );
  }
}

/** A stored record a request names does not fit its schema: it cannot be shown or acted on, only dropped. */
export class MalformedRecord extends Rejection {
  override readonly name = 'MalformedRecord';
  constructor(message: string, detail?: unknown) {
    super(ErrorCode.MALFORMED_RECORD, message, detail);
  }
}

export class Conflict extends Rejection {
  override readonly name = 'Conflict';
  constructor(message: string, detail?: unknown) {
    super(ErrorCode.CONFLICT, message, detail);
  }
}

/**
 * The events of a finished task are no longer stored (past MESH_EVENTS' retention): 410 Gone with the
 * final status record in `detail.status`, instead of a stream that would wait forever.
 */
export class EventsExpired extends Rejection {
  override readonly name = 'EventsExpired';
  constructor(traceId: string, finalStatus: TaskStatusRecord) {
    super(
      ErrorCode.EVENTS_EXPIRED,
      `the events of task ${traceId} are no longer kept (past their retention); it ended ${finalStatus.status}: see detail.status`,
      { status: finalStatus },
    );
  }
}

export class PayloadTooLarge extends Rejection {
  override readonly name = 'PayloadTooLarge';
  constructor(limitBytes: number) {
    super(ErrorCode.PAYLOAD_TOO_LARGE, `request body exceeds ${limitBytes} bytes`, {
      limit_bytes: limitBytes,
    });
  }
}

/** A JSON body nested deeper than the gateway reads; see `json-body.ts`. */
export class NestedTooDeep extends Rejection {
  override readonly name = 'NestedTooDeep';
  constructor(maxDepth: number) {
    super(
      ErrorCode.INVALID_REQUEST,
      `the request body nests objects and arrays more than ${maxDepth} levels deep`,
      { max_depth: maxDepth },
    );
  }
}

/** An idempotency key sent again with another request than the one it was first used with. */
export class IdempotencyKeyReused extends Rejection {
  override readonly name = 'IdempotencyKeyReused';
  constructor() {
    super(
      ErrorCode.IDEMPOTENCY_KEY_REUSED,
      'idempotency_key was already used with another request body; send a new key for a new request',
    );
  }
}

/** Too many of something at once; the client may try again after `retryAfterSeconds`. */
export class RateLimited extends Rejection {
  override readonly name: string = 'RateLimited';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    detail?: unknown,
  ) {
    super(ErrorCode.RATE_LIMITED, message, detail);
  }

  override get headers(): Readonly<Record<string, string>> {
    return { 'retry-after': String(this.retryAfterSeconds) };
  }
}

/** The account has used its daily token cap (429 RATE_LIMITED, Retry-After: the next UTC day). */
export class DailyTokenCapReached extends RateLimited {
  override readonly name = 'DailyTokenCapReached';
  constructor(used: number, cap: number, retryAfterSeconds: number) {
    super(
      `this account used ${used} tokens today (UTC) of its daily cap of ${cap}; retry after the day ends`,
      retryAfterSeconds,
      // Said in the body too: a NATS ingress reply has no Retry-After header.
      {
        scope: 'account_daily_tokens',
        used_tokens: used,
        cap_tokens: cap,
        retry_after_seconds: retryAfterSeconds,
      },
    );
  }
}

/** The account has spent its daily cost cap (402 BUDGET_EXCEEDED). */
export class DailyCostCapReached extends Rejection {
  override readonly name = 'DailyCostCapReached';
  constructor(usedUsd: number, capUsd: number) {
    super(
      ErrorCode.BUDGET_EXCEEDED,
      `this account spent $${usedUsd} today (UTC) of its daily cap of $${capUsd}; no task is accepted until the day ends`,
      { scope: 'account_daily_cost', used_cost_usd: usedUsd, cap_cost_usd: capUsd },
    );
  }
}

export class UnsupportedMediaType extends HttpRefusal {
  override readonly name = 'UnsupportedMediaType';
  protected readonly status = 415;
  constructor() {
    super('unsupported content type: send application/json');
  }
}

export class UriTooLong extends HttpRefusal {
  override readonly name = 'UriTooLong';
  protected readonly status = 414;
  constructor(message: string) {
    super(message);
  }
}

export class HeaderFieldsTooLarge extends HttpRefusal {
  override readonly name = 'HeaderFieldsTooLarge';
  protected readonly status = 431;
  constructor(limitBytes: number) {
    super(`the request line and headers exceed ${limitBytes} bytes`, { limit_bytes: limitBytes });
  }
}

export class RequestTimeout extends HttpRefusal {
  override readonly name = 'RequestTimeout';
  protected readonly status = 408;
  constructor() {
    super('the request did not arrive in time');
  }
}

export class ExpectationFailed extends HttpRefusal {
  override readonly name = 'ExpectationFailed';
  protected readonly status = 417;
  constructor() {
    super('the only expectation supported is `Expect: 100-continue`');
  }
}

/** A request that arrives while the gateway closes: another instance (or this one, restarted) takes it. */
export class ShuttingDown extends Rejection {
  override readonly name = 'ShuttingDown';
  constructor() {
    super(ErrorCode.SERVICE_UNAVAILABLE, 'the gateway is shutting down; retry');
  }

  override get httpStatus(): number {
    return 503;
  }

  override get headers(): Readonly<Record<string, string>> {
    return { connection: 'close' };
  }
}

export class ServiceUnavailable extends Rejection {
  override readonly name = 'ServiceUnavailable';
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.SERVICE_UNAVAILABLE, message, undefined, options);
  }
}

/**
 * The task's publish was never confirmed (JetStream did not answer any try): it may be stored and may
 * run. The answer names the task's trace_id, so a retry with it (or with the same idempotency key) is a
 * repeat of this task, published again under the same Nats-Msg-Id and so stored once.
 */
export class SubmissionUnconfirmed extends Rejection {
  override readonly name = 'SubmissionUnconfirmed';
  constructor(traceId: string, options?: ErrorOptions) {
    super(
      ErrorCode.SERVICE_UNAVAILABLE,
      'the task may or may not have been queued; submit it again with the same trace_id or idempotency key',
      { trace_id: traceId },
      options,
    );
  }
}

export class InternalFailure extends Rejection {
  override readonly name = 'InternalFailure';
  constructor(options?: ErrorOptions) {
    // The cause is logged, never answered.
    super(ErrorCode.INTERNAL, 'internal error', undefined, options);
  }
}

export function sendRejection(reply: FastifyReply, rejection: Rejection): FastifyReply {
  return reply.code(rejection.httpStatus).headers(rejection.headers).send(rejection.toBody());
}
