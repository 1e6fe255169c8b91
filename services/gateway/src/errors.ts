/**
 * How the gateway says no. Expected failures are returned as a {@link Rejection} (one class per
 * condition, each with a protocol code) and turned into the one error body `{code, message, detail}`
 * with the code's HTTP status; Fastify's own failures (body too large, bad JSON, unknown route) are
 * mapped to the same body, and anything else is an INTERNAL error whose details stay in the log.
 */
import {
  ErrorCode,
  errorBody,
  httpStatusOf,
  isRetryableByDefault,
  zodErrorBody,
  type ErrorBody,
} from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { FastifyInstance, FastifyReply } from 'fastify';
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

  toBody(): ErrorBody {
    return errorBody(this.code, this.message, this.detail);
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

export class Unauthorized extends Rejection {
  override readonly name = 'Unauthorized';
  constructor(message: string) {
    super(ErrorCode.UNAUTHORIZED, message);
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

export class Conflict extends Rejection {
  override readonly name = 'Conflict';
  constructor(message: string, detail?: unknown) {
    super(ErrorCode.CONFLICT, message, detail);
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

export class ServiceUnavailable extends Rejection {
  override readonly name = 'ServiceUnavailable';
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.SERVICE_UNAVAILABLE, message, undefined, options);
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
  return reply.code(rejection.httpStatus).send(rejection.toBody());
}

interface FastifyFailure {
  statusCode?: number;
  code?: string;
  message?: string;
}

/** A Fastify failure (or anything thrown in a handler) as a rejection. */
function rejectionOf(error: unknown, bodyLimitBytes: number): Rejection | undefined {
  if (error instanceof Rejection) return error;
  const failure = (typeof error === 'object' && error !== null ? error : {}) as FastifyFailure;
  const status = failure.statusCode;
  if (status === 413 || failure.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new PayloadTooLarge(bodyLimitBytes);
  if (status === 415) return new InvalidRequest('unsupported content type: send application/json');
  if (failure.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) {
    return new InvalidRequest('the request body is not valid JSON');
  }
  if (status !== undefined && status >= 400 && status < 500) {
    return new InvalidRequest(failure.message || 'invalid request');
  }
  return undefined;
}

/** Makes every reply the gateway did not produce itself carry the one error body. */
export function installErrorReplies(app: FastifyInstance, log: Logger, bodyLimitBytes: number): void {
  app.setErrorHandler((error, request, reply) => {
    // Some routes have a limit of their own (the plugin import).
    const rejection = rejectionOf(error, request.routeOptions.bodyLimit ?? bodyLimitBytes);
    if (rejection) return sendRejection(reply, rejection);
    log.error({ err: error, method: request.method, route: request.routeOptions.url }, 'request failed');
    return sendRejection(reply, new InternalFailure({ cause: error }));
  });
  app.setNotFoundHandler((request, reply) =>
    sendRejection(reply, new NotFound(`no route ${request.method} ${request.url.split('?')[0]}`)),
  );
}
