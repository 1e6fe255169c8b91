// One list of error codes shared by HTTP bodies, NATS replies and task events, each with its HTTP status and
// whether retrying the same request can help. Also turns zod rejections into bodies that name the bad path.
import { z } from 'zod';

export const ErrorCode = {
  INVALID_REQUEST: 'INVALID_REQUEST',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  CONFLICT: 'CONFLICT',
  /** An idempotency key came back with another request body than the one it was first used with. */
  IDEMPOTENCY_KEY_REUSED: 'IDEMPOTENCY_KEY_REUSED',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  RATE_LIMITED: 'RATE_LIMITED',
  CREDENTIALS_MISSING: 'CREDENTIALS_MISSING',
  LLM_UNAVAILABLE: 'LLM_UNAVAILABLE',
  LLM_ERROR: 'LLM_ERROR',
  TOOL_TIMEOUT: 'TOOL_TIMEOUT',
  TOOL_ERROR: 'TOOL_ERROR',
  MAX_STEPS_EXCEEDED: 'MAX_STEPS_EXCEEDED',
  CANCELLED: 'CANCELLED',
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  UNSUPPORTED_ACTION_TYPE: 'UNSUPPORTED_ACTION_TYPE',
  SCHEMA_CONVERSION_ERROR: 'SCHEMA_CONVERSION_ERROR',
  MAX_DELIVER_EXCEEDED: 'MAX_DELIVER_EXCEEDED',
  /**
   * A task's sealed vault does not open for the task it arrived in: it was sealed for another account,
   * user, trace, workflow, model endpoint, tool set or input, or altered on the way.
   */
  TASK_BINDING_MISMATCH: 'TASK_BINDING_MISMATCH',
  /**
   * A finished task whose events are no longer stored (past the retention of MESH_EVENTS): they cannot
   * be replayed; its final status is all that is left.
   */
  EVENTS_EXPIRED: 'EVENTS_EXPIRED',
  /**
   * A task went past its token or cost budget (ended between model calls), or an account past its daily
   * cost cap (refused at submit).
   */
  BUDGET_EXCEEDED: 'BUDGET_EXCEEDED',
  /** A tool call waited for approval longer than its timeout; the task ends. */
  APPROVAL_TIMEOUT: 'APPROVAL_TIMEOUT',
  /** An agent tool's call would nest sub-tasks deeper, or start more of them, than the mesh allows. */
  SUBTASK_LIMIT_EXCEEDED: 'SUBTASK_LIMIT_EXCEEDED',
  /**
   * A stored record the request names does not fit its schema (a dead letter published by hand or by a
   * bug): it cannot be shown or acted on; it can be dropped.
   */
  MALFORMED_RECORD: 'MALFORMED_RECORD',
  /** The model's final answer did not validate against the task's output schema, after the retries allowed. */
  OUTPUT_INVALID: 'OUTPUT_INVALID',
  /**
   * A task pinned to an agent version would run a tool whose definition is no longer the one that version
   * recorded (its `tool_digests`): the run would not be the version's, so it is refused at assembly.
   */
  AGENT_VERSION_TOOLS_CHANGED: 'AGENT_VERSION_TOOLS_CHANGED',
  INTERNAL: 'INTERNAL',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export const ErrorCodeSchema = z.enum(ErrorCode);

export interface ErrorCodeInfo {
  /** Status of an HTTP response carrying this code. */
  readonly httpStatus: number;
  /** Whether the same request, sent again later, may succeed. */
  readonly retryable: boolean;
}

export const ERROR_CODE_INFO: { readonly [C in ErrorCode]: ErrorCodeInfo } = {
  INVALID_REQUEST: { httpStatus: 400, retryable: false },
  UNAUTHORIZED: { httpStatus: 401, retryable: false },
  FORBIDDEN: { httpStatus: 403, retryable: false },
  NOT_FOUND: { httpStatus: 404, retryable: false },
  CONFLICT: { httpStatus: 409, retryable: false },
  IDEMPOTENCY_KEY_REUSED: { httpStatus: 422, retryable: false },
  PAYLOAD_TOO_LARGE: { httpStatus: 413, retryable: false },
  RATE_LIMITED: { httpStatus: 429, retryable: true },
  // The request is well formed but the user has not stored the keys it needs.
  CREDENTIALS_MISSING: { httpStatus: 422, retryable: false },
  LLM_UNAVAILABLE: { httpStatus: 503, retryable: true },
  // The model answered with an error that is not about load (bad request, content filter, ...).
  LLM_ERROR: { httpStatus: 502, retryable: false },
  TOOL_TIMEOUT: { httpStatus: 504, retryable: true },
  TOOL_ERROR: { httpStatus: 502, retryable: false },
  MAX_STEPS_EXCEEDED: { httpStatus: 422, retryable: false },
  // 499 as in gRPC's HTTP mapping of CANCELLED (client closed request).
  CANCELLED: { httpStatus: 499, retryable: false },
  // Retrying cannot help: the deadline has passed.
  DEADLINE_EXCEEDED: { httpStatus: 504, retryable: false },
  // Seed 004 answers an unreachable upstream with 502 SERVICE_UNAVAILABLE.
  SERVICE_UNAVAILABLE: { httpStatus: 502, retryable: true },
  UNSUPPORTED_ACTION_TYPE: { httpStatus: 400, retryable: false },
  SCHEMA_CONVERSION_ERROR: { httpStatus: 500, retryable: false },
  MAX_DELIVER_EXCEEDED: { httpStatus: 500, retryable: false },
  TASK_BINDING_MISMATCH: { httpStatus: 403, retryable: false },
  // 410 Gone: the events existed and will not come back.
  EVENTS_EXPIRED: { httpStatus: 410, retryable: false },
  // 402 Payment Required: spending more is what is refused; a new budget (or day) is needed.
  BUDGET_EXCEEDED: { httpStatus: 402, retryable: false },
  APPROVAL_TIMEOUT: { httpStatus: 504, retryable: false },
  SUBTASK_LIMIT_EXCEEDED: { httpStatus: 422, retryable: false },
  // 422: the request is sound; what it names cannot be processed, and asking again will not change that.
  MALFORMED_RECORD: { httpStatus: 422, retryable: false },
  // 502 like LLM_ERROR: the upstream model answered, with something unusable.
  OUTPUT_INVALID: { httpStatus: 502, retryable: false },
  // The pinned version can only run again once its tools are as it recorded them (or a new version is written).
  AGENT_VERSION_TOOLS_CHANGED: { httpStatus: 409, retryable: false },
  INTERNAL: { httpStatus: 500, retryable: false },
};

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_CODE_INFO[code].httpStatus;
}

export function isRetryableByDefault(code: ErrorCode): boolean {
  return ERROR_CODE_INFO[code].retryable;
}

/** The one error body of HTTP responses, NATS replies and seed 004's recall endpoint. */
export const ErrorBody = z.object({
  code: ErrorCodeSchema,
  message: z.string().min(1),
  detail: z.unknown().optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export interface IssueDescription {
  /** Where the problem is, e.g. `runtime_config.tools[0].execution_config.method`; empty for the root. */
  readonly path: string;
  readonly message: string;
}

export interface ZodErrorDescription {
  readonly message: string;
  readonly detail: { readonly issues: readonly IssueDescription[] };
}

const PLAIN_KEY = /^[A-Za-z_$][\w$-]*$/;

/** `['a', 'b', 0, 'c']` → `a.b[0].c`; keys that would read ambiguously are quoted: `a["x.y"]`. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else {
      const name = typeof key === 'symbol' ? (key.description ?? 'symbol') : key;
      if (PLAIN_KEY.test(name)) out += out === '' ? name : `.${name}`;
      else out += `[${JSON.stringify(name)}]`;
    }
  }
  return out;
}

/**
 * A readable account of why a value was rejected. Union failures are reported through the branch that got
 * furthest, so the path points at the field to fix rather than at the union.
 */
export function describeZodError(error: z.ZodError): ZodErrorDescription {
  const issues = flattenIssues(error.issues, []);
  const message = issues.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ');
  return { message: message || 'invalid value', detail: { issues } };
}

/** An error body, with `detail` only when there is one (so it is absent, not `undefined`, in JSON). */
export function errorBody(code: ErrorCode, message: string, detail?: unknown): ErrorBody {
  return detail === undefined ? { code, message } : { code, message, detail };
}

/** An INVALID_REQUEST (or other) body for a zod rejection. */
export function zodErrorBody(error: z.ZodError, code: ErrorCode = ErrorCode.INVALID_REQUEST): ErrorBody {
  const { message, detail } = describeZodError(error);
  return { code, message, detail };
}

function flattenIssues(
  issues: readonly z.core.$ZodIssue[],
  prefix: readonly PropertyKey[],
): IssueDescription[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: formatIssuePath([...path, key]), message: 'unknown field' }));
    }
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      return flattenIssues(closestBranch(issue.errors), path);
    }
    return [{ path: formatIssuePath(path), message: issue.message }];
  });
}

/**
 * The union branch whose failures lie deepest (it matched most), then the one with fewest failures. A branch
 * that failed only because its discriminator did not match is the least relevant of all.
 */
function closestBranch(branches: readonly (readonly z.core.$ZodIssue[])[]): readonly z.core.$ZodIssue[] {
  const issueDepth = (issue: z.core.$ZodIssue) =>
    issue.code === 'invalid_union' && issue.errors.length === 0 && 'discriminator' in issue
      ? -1
      : issue.path.length;
  const depth = (branch: readonly z.core.$ZodIssue[]) => Math.max(-1, ...branch.map(issueDepth));
  return branches.reduce((best, branch) => {
    const byDepth = depth(branch) - depth(best);
    return byDepth > 0 || (byDepth === 0 && branch.length < best.length) ? branch : best;
  });
}
