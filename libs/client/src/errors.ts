/**
 * What can go wrong talking to the gateway, one class per condition. Each carries a protocol error
 * code and whether trying again later may help, and chains what caused it:
 * - {@link MeshApiError}: the gateway answered with its error body `{code, message, detail}`;
 * - {@link MeshUnreachableError}: no answer from the gateway (refused, reset, DNS, a proxy's 502/503/504);
 * - {@link MeshProtocolError}: an answer that breaks the contract (not JSON, fails the schema).
 */
import {
  describeZodError,
  ErrorCode,
  errorBody,
  isRetryableByDefault,
  type ErrorBody,
} from '@agentmesh/protocol';
import type { z } from 'zod';

export abstract class MeshClientError extends Error {
  abstract readonly code: ErrorCode;
  abstract readonly retryable: boolean;
}

export class MeshApiError extends MeshClientError {
  override readonly name = 'MeshApiError';
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly detail: unknown;

  constructor(
    /** HTTP status of the answer. */
    readonly status: number,
    body: ErrorBody,
  ) {
    super(body.message);
    this.code = body.code;
    this.detail = body.detail;
    this.retryable = isRetryableByDefault(body.code);
  }

  /** The gateway's error body, as it was answered. */
  toBody(): ErrorBody {
    return errorBody(this.code, this.message, this.detail);
  }
}

export class MeshUnreachableError extends MeshClientError {
  override readonly name = 'MeshUnreachableError';
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
  readonly retryable = true;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

export class MeshProtocolError extends MeshClientError {
  override readonly name = 'MeshProtocolError';
  readonly code = ErrorCode.INTERNAL;
  readonly retryable = false;

  constructor(
    message: string,
    /** Which fields were wrong, when a schema said so. */
    readonly detail?: unknown,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** `what` (e.g. "the reply to POST /v1/tasks") failed its schema; the message names the bad paths. */
  static fromZod(what: string, error: z.ZodError): MeshProtocolError {
    const { message, detail } = describeZodError(error);
    return new MeshProtocolError(`${what} breaks the contract: ${message}`, detail, { cause: error });
  }
}
