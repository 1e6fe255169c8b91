/**
 * Errors of the OpenAI-compatible façade in OpenAI's own shape, `{error: {message, type, param, code}}`,
 * because OpenAI clients read nothing else: the official SDK builds its `APIError` from `error`, and
 * the Vercel AI SDK's OpenAI-compatible provider parses exactly that object (in a response body and as a
 * streamed chunk). The HTTP status is the mesh's for the code (`httpStatusOf`), so a 429 still carries
 * `Retry-After`; `code` is the mesh's code in lower case (`rate_limited`, `cancelled`, ...), except where
 * OpenAI has a code of its own that clients recognise (`invalid_api_key`, `model_not_found`).
 */
import { ErrorCode, httpStatusOf, type ErrorBody } from '@agentmesh/protocol';
import { InvalidRequest, NotFound, Rejection } from '../errors.js';

export interface OpenAiErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | null;
  };
}

/** What `type` OpenAI gives an error of this HTTP status. */
function errorTypeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function codeOf(code: ErrorCode): string {
  return code === ErrorCode.UNAUTHORIZED ? 'invalid_api_key' : code.toLowerCase();
}

/** The first offending path of a zod rejection's detail, as OpenAI's `param`. */
function paramOf(detail: unknown): string | null {
  if (typeof detail !== 'object' || detail === null || !('issues' in detail)) return null;
  const issues = (detail as { issues?: unknown }).issues;
  if (!Array.isArray(issues)) return null;
  const first = issues[0] as { path?: unknown } | undefined;
  return typeof first?.path === 'string' && first.path !== '' ? first.path : null;
}

/** A mesh error body (a rejection's, or a task's `error` event data) in OpenAI's shape. */
export function openAiErrorBody(
  body: Pick<ErrorBody, 'code' | 'message' | 'detail'>,
  overrides: { param?: string | null; code?: string } = {},
): OpenAiErrorBody {
  return {
    error: {
      message: body.message,
      type: errorTypeOf(httpStatusOf(body.code)),
      param: overrides.param !== undefined ? overrides.param : paramOf(body.detail),
      code: overrides.code ?? codeOf(body.code),
    },
  };
}

/** A refusal of the façade: the mesh rejection plus what OpenAI's shape says more precisely. */
export class OpenAiRefusal {
  constructor(
    readonly rejection: Rejection,
    readonly param: string | null = null,
    readonly openAiCode?: string,
  ) {}

  get httpStatus(): number {
    return this.rejection.httpStatus;
  }

  get headers(): Readonly<Record<string, string>> {
    return this.rejection.headers;
  }

  toBody(): OpenAiErrorBody {
    return openAiErrorBody(this.rejection.toBody(), {
      ...(this.param !== null ? { param: this.param } : {}),
      ...(this.openAiCode !== undefined ? { code: this.openAiCode } : {}),
    });
  }
}

/** A rejection from the gateway's shared paths (auth, limits, submission) as the façade answers it. */
export function refusalOf(rejection: Rejection): OpenAiRefusal {
  return new OpenAiRefusal(rejection);
}

/** A request field the façade cannot map onto a task. */
export function unsupportedField(param: string, message: string): OpenAiRefusal {
  return new OpenAiRefusal(new InvalidRequest(message), param);
}

/** `model` names no agent the caller may run. */
export function modelNotFound(model: string): OpenAiRefusal {
  return new OpenAiRefusal(
    new NotFound(`The model \`${model}\` does not exist or you do not have access to it.`),
    'model',
    'model_not_found',
  );
}

/** What Fastify refuses before the route runs (bad JSON, wrong content type, body too large). */
export function frameworkRefusal(error: unknown): OpenAiRefusal | undefined {
  if (error instanceof Rejection) return refusalOf(error);
  const failure = (typeof error === 'object' && error !== null ? error : {}) as {
    statusCode?: number;
    code?: string;
    message?: string;
  };
  if (failure.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) {
    return new OpenAiRefusal(new InvalidRequest('the request body is not valid JSON'));
  }
  const status = failure.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new OpenAiRefusal(new StatusRefusal(status, failure.message || 'invalid request'));
  }
  return undefined;
}

/** A client error Fastify answered with a status of its own (413, 415, ...), kept. */
class StatusRefusal extends Rejection {
  override readonly name = 'StatusRefusal';
  constructor(
    private readonly status: number,
    message: string,
  ) {
    super(status === 413 ? ErrorCode.PAYLOAD_TOO_LARGE : ErrorCode.INVALID_REQUEST, message);
  }

  override get httpStatus(): number {
    return this.status;
  }
}
