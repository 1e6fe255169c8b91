/**
 * Seed 004's recall, asked of the recall service: a request/reply on `mesh.recall.actions` carrying the
 * account in the seed's `x-account-id` / `x-account-type` headers (and in the body, as the protocol's
 * RecallRequest has them) and the trace context. The answer is passed on as the service wrote it.
 *
 * The service answers failures as NATS micro-service errors — `Nats-Service-Error-Code` is the seed's HTTP
 * status, `Nats-Service-Error` a description, the payload the seed's error body `{code, message, detail}`.
 * A plain JSON error body without those headers is understood too, and anything unreadable, a missing
 * responder or a time-out is the seed's 502 SERVICE_UNAVAILABLE.
 */
import { ErrorBody, ErrorCode, httpStatusOf, Subjects, type RecallRequest } from '@agentmesh/protocol';
import { encodeJson } from '@agentmesh/bus';
import { injectTraceContext, type Logger } from '@agentmesh/runtime';
import {
  headers as natsHeaders,
  Match,
  RequestError,
  TimeoutError,
  type Msg,
  type NatsConnection,
} from '@nats-io/transport-node';
import { context, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { Rejection } from './errors.js';

export const ACCOUNT_ID_HEADER = 'x-account-id';
export const ACCOUNT_TYPE_HEADER = 'x-account-type';
const SERVICE_ERROR_CODE_HEADER = 'Nats-Service-Error-Code';
const SERVICE_ERROR_HEADER = 'Nats-Service-Error';

const tracer = trace.getTracer('gateway');
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The recall service's refusal, passed on with the status it gave. */
export class RecallRefused extends Rejection {
  override readonly name = 'RecallRefused';

  constructor(
    private readonly status: number,
    body: ErrorBody,
  ) {
    super(body.code, body.message, body.detail);
  }

  override get httpStatus(): number {
    return this.status;
  }
}

/** The recall service could not be asked, or answered nothing usable (502, as seed 004 §6). */
export class RecallUnavailable extends Rejection {
  override readonly name = 'RecallUnavailable';

  constructor(message: string, detail?: unknown, options?: ErrorOptions) {
    super(ErrorCode.SERVICE_UNAVAILABLE, message, detail, options);
  }
}

export interface RecallForwarderOptions {
  nc: NatsConnection;
  timeoutMs: number;
  log: Logger;
}

export class RecallForwarder {
  constructor(private readonly options: RecallForwarderOptions) {}

  /** The service's `{_dynamic_tools}` answer as JSON text, or why there is none. */
  recall(request: RecallRequest, parent: Context = context.active()): Promise<string | Rejection> {
    return context.with(parent, () =>
      tracer.startActiveSpan(
        'gateway.recall',
        {
          kind: SpanKind.CLIENT,
          attributes: { 'recall.kn_id': request.kn_id, 'recall.at_id': request.at_id },
        },
        async (span) => {
          try {
            const outcome = await this.ask(request);
            if (outcome instanceof Rejection) {
              span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message });
              span.setAttribute('recall.error_code', outcome.code);
            }
            return outcome;
          } finally {
            span.end();
          }
        },
      ),
    );
  }

  private async ask(request: RecallRequest): Promise<string | Rejection> {
    const headers = natsHeaders();
    headers.set(ACCOUNT_ID_HEADER, request.account_id);
    headers.set(ACCOUNT_TYPE_HEADER, request.account_type);
    injectTraceContext(headers);
    let reply: Msg;
    try {
      reply = await this.options.nc.request(Subjects.RECALL_ACTIONS, encodeJson(request), {
        timeout: this.options.timeoutMs,
        headers,
      });
    } catch (error) {
      const rejection = unreachable(error, this.options.timeoutMs);
      this.options.log.warn({ err: error, code: rejection.code }, rejection.message);
      return rejection;
    }
    const answer = readAnswer(reply);
    if (answer instanceof Rejection) {
      this.options.log.info({ code: answer.code, status: answer.httpStatus }, 'recall refused');
    }
    return answer;
  }
}

function unreachable(error: unknown, timeoutMs: number): RecallUnavailable {
  if (error instanceof TimeoutError) {
    return new RecallUnavailable(`the recall service did not answer within ${timeoutMs} ms`, undefined, {
      cause: error,
    });
  }
  if (error instanceof RequestError && error.isNoResponders()) {
    return new RecallUnavailable('the recall service is not running (no responder on the bus)', undefined, {
      cause: error,
    });
  }
  return new RecallUnavailable('the recall service cannot be reached', undefined, { cause: error });
}

function readAnswer(reply: Msg): string | Rejection {
  const statusHeader = reply.headers?.get(SERVICE_ERROR_CODE_HEADER, Match.IgnoreCase);
  const description = reply.headers?.get(SERVICE_ERROR_HEADER, Match.IgnoreCase) ?? '';
  let text = '';
  let body: unknown;
  try {
    text = decoder.decode(reply.data);
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = ErrorBody.safeParse(body);

  if (statusHeader) {
    const status = Number(statusHeader);
    const usable = Number.isInteger(status) && status >= 400 && status <= 599;
    if (error.success) return new RecallRefused(usable ? status : httpStatusOf(error.data.code), error.data);
    const code = usable ? codeForStatus(status) : ErrorCode.SERVICE_UNAVAILABLE;
    return new RecallRefused(usable ? status : httpStatusOf(code), {
      code,
      message: description.trim() || 'the recall service refused the request',
    });
  }
  if (isRecallAnswer(body)) return text;
  if (error.success) return new RecallRefused(httpStatusOf(error.data.code), error.data);
  return new RecallUnavailable('the recall service answered something that is neither tools nor an error', {
    answer_excerpt: text.slice(0, 256),
  });
}

function isRecallAnswer(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    Array.isArray((body as { _dynamic_tools?: unknown })._dynamic_tools)
  );
}

/** The code of a refusal whose body was lost: the seed's codes for its statuses. */
function codeForStatus(status: number): ErrorCode {
  if (status === 400) return ErrorCode.INVALID_REQUEST;
  if (status === 502 || status === 503 || status === 504) return ErrorCode.SERVICE_UNAVAILABLE;
  if (status < 500) return ErrorCode.INVALID_REQUEST;
  return ErrorCode.INTERNAL;
}
