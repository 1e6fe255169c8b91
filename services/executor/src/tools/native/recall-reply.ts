/**
 * Reads the recall service's answer to a `mesh.recall.actions` request as a tool outcome. Success is
 * `{_dynamic_tools: [...]}`. The service answers failures as NATS micro-service errors:
 * `Nats-Service-Error-Code` is seed 004's HTTP status and the payload the seed's body `{code, message,
 * detail}`; the model gets that code, and the status in the detail. A request that could not be
 * answered at all (no responder, time-out) is seed 004's SERVICE_UNAVAILABLE.
 */
import { ActionRecallResponse, ErrorBody, ErrorCode } from '@agentmesh/protocol';
import { Match, RequestError, TimeoutError, type Msg } from '@nats-io/transport-node';
import { toolFailure, toolSuccess, type ToolOutcome } from '../index.js';

const SERVICE_ERROR_CODE_HEADER = 'Nats-Service-Error-Code';
const SERVICE_ERROR_HEADER = 'Nats-Service-Error';
const EXCERPT_CHARS = 256;

const decoder = new TextDecoder();

export function recallReplyOutcome(reply: Msg): ToolOutcome {
  const text = decoder.decode(reply.data);
  const body = parseJson(text);
  const statusHeader = reply.headers?.get(SERVICE_ERROR_CODE_HEADER, Match.IgnoreCase);
  const error = ErrorBody.safeParse(body);
  if (statusHeader) {
    const status = Number(statusHeader);
    if (error.success) return refused(error.data, status);
    const description = reply.headers?.get(SERVICE_ERROR_HEADER, Match.IgnoreCase).trim();
    return toolFailure(codeForStatus(status), `recall refused: ${description || `status ${statusHeader}`}`, {
      status,
    });
  }
  const answer = ActionRecallResponse.safeParse(body);
  if (answer.success) return toolSuccess(answer.data);
  if (error.success) return refused(error.data);
  return toolFailure(
    ErrorCode.SERVICE_UNAVAILABLE,
    'the recall service answered something that is neither _dynamic_tools nor an error',
    { answer_excerpt: text.slice(0, EXCERPT_CHARS) },
  );
}

/** The outcome of a request that got no answer. Anything else thrown is not ours to explain. */
export function recallUnansweredOutcome(error: unknown, timeoutMs: number): ToolOutcome | undefined {
  if (error instanceof TimeoutError) {
    return toolFailure(
      ErrorCode.SERVICE_UNAVAILABLE,
      `the recall service did not answer within ${timeoutMs} ms`,
    );
  }
  if (error instanceof RequestError && error.isNoResponders()) {
    return toolFailure(
      ErrorCode.SERVICE_UNAVAILABLE,
      'the recall service is not running (no responder on the bus)',
    );
  }
  return undefined;
}

function refused(body: ErrorBody, status?: number): ToolOutcome {
  const detail =
    status === undefined && body.detail === undefined
      ? undefined
      : {
          ...(status === undefined ? {} : { status }),
          ...(body.detail === undefined ? {} : { detail: body.detail }),
        };
  return toolFailure(body.code, `recall refused: ${body.message}`, detail);
}

/** The code of a refusal whose body was lost: seed 004's codes for its statuses. */
function codeForStatus(status: number): ErrorCode {
  if (status === 404) return ErrorCode.NOT_FOUND;
  if (status >= 400 && status <= 499) return ErrorCode.INVALID_REQUEST;
  if (status === 500) return ErrorCode.INTERNAL;
  return ErrorCode.SERVICE_UNAVAILABLE;
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}
