/**
 * The expected failures of a recall, one class per condition of seed 004 §6. Each carries its protocol code,
 * whether a retry may help, and the seed's error body `{code, message, detail}` it is answered with.
 */
import {
  ErrorCode,
  errorBody,
  httpStatusOf,
  isRetryableByDefault,
  zodErrorBody,
  type ErrorBody,
  type IdentityFailure,
} from '@agentmesh/protocol';
import type { z } from 'zod';

export abstract class RecallError extends Error {
  abstract readonly code: ErrorCode;
  readonly detail: unknown;

  constructor(message: string, detail?: unknown, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.detail = detail;
  }

  get retryable(): boolean {
    return isRetryableByDefault(this.code);
  }

  /** The seed's HTTP status for this condition; also the NATS service error code. */
  get status(): number {
    return httpStatusOf(this.code);
  }

  toBody(): ErrorBody {
    return errorBody(this.code, this.message, this.detail);
  }
}

/** Malformed request: bad JSON, a missing field or header, a malformed `unique_identity` (400). */
export class InvalidRecallRequestError extends RecallError {
  readonly code = ErrorCode.INVALID_REQUEST;

  static fromZod(error: z.ZodError): InvalidRecallRequestError {
    const body = zodErrorBody(error);
    return new InvalidRecallRequestError(body.message, body.detail, { cause: error });
  }
}

/** What went wrong with an upstream call, for the error detail. */
export const UpstreamFailure = {
  TIMEOUT: 'timeout',
  CONNECTION: 'connection',
  STATUS: 'status',
  MALFORMED_JSON: 'malformed_json',
  UNEXPECTED_SHAPE: 'unexpected_shape',
} as const;
export type UpstreamFailure = (typeof UpstreamFailure)[keyof typeof UpstreamFailure];

export interface UpstreamFailureDetail {
  /** `ontology-query` or `agent-operator-integration`. */
  upstream: string;
  /** `POST /api/ontology-query/v1/...` (no host: the caller need not learn our topology). */
  request: string;
  reason: UpstreamFailure;
  /** The upstream's HTTP status, when it answered. */
  status?: number;
  /** The start of the upstream's answer, when it answered. */
  body_excerpt?: string;
  /** How many attempts were made, when the call itself failed. */
  attempts?: number;
}

/** An upstream timed out, refused the connection, answered non-2xx or answered something unreadable (502). */
export class UpstreamUnavailableError extends RecallError {
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
  declare readonly detail: UpstreamFailureDetail;

  constructor(message: string, detail: UpstreamFailureDetail, options?: ErrorOptions) {
    super(message, detail, options);
  }

  /** Whether sending the same request again may succeed (time-outs, connection failures, 429, 5xx). */
  get transient(): boolean {
    const { reason, status } = this.detail;
    if (reason === UpstreamFailure.TIMEOUT || reason === UpstreamFailure.CONNECTION) return true;
    return reason === UpstreamFailure.STATUS && status !== undefined && (status === 429 || status >= 500);
  }
}

/** `action_source.type` is not `tool` (400). */
export class UnsupportedActionTypeError extends RecallError {
  readonly code = ErrorCode.UNSUPPORTED_ACTION_TYPE;

  constructor(actionSource: unknown, message = 'only action sources of type=tool or type=mcp are supported') {
    super(message, { action_source: actionSource });
  }
}

/** The tool's `api_spec` could not be turned into a function schema (500); details go to the log only. */
export class SchemaConversionError extends RecallError {
  readonly code = ErrorCode.SCHEMA_CONVERSION_ERROR;

  constructor(
    readonly boxId: string,
    readonly toolId: string,
    cause: unknown,
  ) {
    super(
      'the tool definition could not be converted into a function schema',
      { box_id: boxId, tool_id: toolId },
      { cause },
    );
  }
}

/**
 * ontology-query's action type carries a `condition` recall cannot read (an unknown operation, a missing
 * field or value, a value of the wrong shape): the actions are not offered, since nobody can tell whether
 * they should be (502, as any other upstream answer recall cannot use; sending it again will not help).
 */
export class UnreadableConditionError extends RecallError {
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;

  constructor(
    actionType: string | undefined,
    readonly path: string,
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(
      `ontology-query: the condition of action type ${JSON.stringify(actionType ?? '?')} cannot be read (${path || '(condition)'}: ${problem})`,
      {
        upstream: 'ontology-query',
        reason: 'unreadable_condition',
        ...(actionType === undefined ? {} : { action_type: actionType }),
        path: path === '' ? 'condition' : `condition.${path}`,
        problem,
      },
      options,
    );
  }

  override get retryable(): boolean {
    return false;
  }
}

/**
 * Every identity of a plural recall failed: answered with the first failure's code and status, and every
 * identity's error under `detail.failures`.
 */
export class EveryIdentityFailedError extends RecallError {
  readonly code: ErrorCode;

  constructor(readonly failures: readonly IdentityFailure[]) {
    const [first] = failures;
    super(
      `none of the ${failures.length} identities could be recalled${first === undefined ? '' : `: ${first.message}`}`,
      { failures },
    );
    this.code = first?.code ?? ErrorCode.INTERNAL;
  }
}
