/**
 * Answers one `mesh.recall.actions` request inside the caller's trace: the `_dynamic_tools` as JSON, or a
 * NATS service error whose code is the seed's HTTP status and whose payload is the seed's error body
 * `{code, message, detail}`, so that a gateway can forward both unchanged. Never throws.
 */
import { ErrorCode, type ErrorBody } from '@agentmesh/protocol';
import { extractTraceContext, type Logger } from '@agentmesh/runtime';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ActionRecall } from './action-recall.js';
import type { ServiceRequest } from './micro-service.js';
import { RecallError, SchemaConversionError } from './recall-errors.js';
import type { RecallMetrics } from './recall-metrics.js';
import { parseRecallRequest } from './recall-request.js';

const tracer = trace.getTracer('recall');
const encoder = new TextEncoder();

export interface RecallEndpointDependencies {
  recall: ActionRecall;
  log: Logger;
  metrics: RecallMetrics;
}

export async function answerRecallRequest(
  msg: ServiceRequest,
  deps: RecallEndpointDependencies,
): Promise<void> {
  const answered = deps.metrics.request();
  const parent = extractTraceContext(msg.headers);
  await context.with(parent, () =>
    tracer.startActiveSpan('recall actions', { kind: SpanKind.SERVER }, async (span) => {
      try {
        const request = parseRecallRequest(msg.data, msg.headers);
        span.setAttributes({ 'recall.kn_id': request.kn_id, 'recall.at_id': request.at_id });
        const { response, sources } = await deps.recall.recall(request);
        span.setAttribute('recall.tools', response._dynamic_tools.length);
        deps.log.info(
          {
            kn_id: request.kn_id,
            at_id: request.at_id,
            account_id: request.account_id,
            tools: response._dynamic_tools.length,
            ...(response.failures === undefined ? {} : { failed_identities: response.failures.length }),
            actions_from: sources.actions,
            tool_from: sources.tool,
          },
          'recall answered',
        );
        reply(msg, deps.log, () => msg.respond(encoder.encode(JSON.stringify(response))));
        answered();
      } catch (error) {
        const failure = describeFailure(error, deps.log);
        answered(failure.body.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.body.message });
        span.setAttribute('recall.error_code', failure.body.code);
        reply(msg, deps.log, () =>
          msg.respondError(
            failure.status,
            oneLine(failure.body.message),
            encoder.encode(JSON.stringify(failure.body)),
            { headers: natsHeaders() },
          ),
        );
      } finally {
        span.end();
      }
    }),
  );
}

function describeFailure(error: unknown, log: Logger): { status: number; body: ErrorBody } {
  if (error instanceof SchemaConversionError) {
    log.error(
      { box_id: error.boxId, tool_id: error.toolId, err: error.cause },
      'tool schema conversion failed',
    );
  } else if (error instanceof RecallError) {
    log.warn({ code: error.code, message: error.message, detail: error.detail }, 'recall refused');
  } else {
    log.error({ err: error }, 'recall failed unexpectedly');
  }
  if (error instanceof RecallError) return { status: error.status, body: error.toBody() };
  return { status: 500, body: { code: ErrorCode.INTERNAL, message: 'internal error' } };
}

function reply(msg: ServiceRequest, log: Logger, send: () => boolean): void {
  if (!msg.reply) {
    log.debug('recall request without a reply subject; answer dropped');
    return;
  }
  try {
    send();
  } catch (error) {
    log.warn({ err: error }, 'reply to a recall request failed');
  }
}

/** A NATS header value cannot hold line breaks. */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, 256);
}
