/**
 * W3C trace context across NATS: injected into the headers of every message published and extracted
 * from every message consumed, so one task is one trace. A task's `trace_id` IS its trace id: the
 * first span of a task is started under {@link taskRootContext}, which carries that id.
 */
import {
  context,
  isSpanContextValid,
  propagation,
  trace,
  TraceFlags,
  type Context,
} from '@opentelemetry/api';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';

const setter = { set: (carrier: MsgHdrs, key: string, value: string) => carrier.set(key, value) };
const getter = {
  get: (carrier: MsgHdrs | undefined, key: string) => carrier?.get(key) || undefined,
  keys: (carrier: MsgHdrs | undefined) => (carrier ? carrier.keys() : []),
};

/** Adds `traceparent` (and `tracestate`) of `ctx` to NATS headers, creating them when absent. */
export function injectTraceContext(
  headers: MsgHdrs = natsHeaders(),
  ctx: Context = context.active(),
): MsgHdrs {
  propagation.inject(ctx, headers, setter);
  return headers;
}

/** The context carried by a consumed message's headers (the active context when there is none). */
export function extractTraceContext(headers: MsgHdrs | undefined): Context {
  return propagation.extract(context.active(), headers, getter);
}

/**
 * A context whose parent span belongs to the trace `traceId`, so that spans started under it join the
 * task's trace. Used where a task enters the mesh (the gateway) and where a message arrives without
 * trace headers.
 */
export function taskRootContext(traceId: string, base: Context = context.active()): Context {
  return trace.setSpanContext(base, {
    traceId,
    spanId: randomBytes(8).toString('hex'),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

/**
 * The parent of the spans a service starts for a consumed task message: the trace context the message
 * carries when it is a valid span of the task's own trace (the gateway started it under
 * {@link taskRootContext}), else a root in the task's trace, so a message without trace headers, or with
 * another trace's, still joins its task's trace.
 */
export function taskParentContext(headers: MsgHdrs | undefined, traceId: string): Context {
  const extracted = extractTraceContext(headers);
  const carried = trace.getSpanContext(extracted);
  return carried && isSpanContextValid(carried) && carried.traceId === traceId
    ? extracted
    : taskRootContext(traceId, extracted);
}

/** The trace and span ids of the active span, for log lines. */
export function activeTraceIds(
  ctx: Context = context.active(),
): { trace_id: string; span_id: string } | undefined {
  const span = trace.getSpan(ctx);
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
