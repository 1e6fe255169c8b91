import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { startTelemetry, type Telemetry } from './telemetry.js';
import {
  extractTraceContext,
  injectTraceContext,
  taskParentContext,
  taskRootContext,
} from './trace-context.js';

const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor({ exporter });
let telemetry: Telemetry;
beforeAll(() => {
  telemetry = startTelemetry({ service: 'test', env: {}, spanProcessors: [processor] });
});
afterAll(async () => {
  await telemetry.shutdown();
});

describe('trace context across NATS headers', () => {
  const taskTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const tracer = trace.getTracer('test');

  it('a span started under the task root context belongs to the task trace', () => {
    const span = tracer.startSpan('gateway.submit', {}, taskRootContext(taskTraceId));
    expect(span.spanContext().traceId).toBe(taskTraceId);
    span.end();
  });

  it('a context injected into message headers and extracted on the other side continues the same trace', async () => {
    const publisher = tracer.startSpan('publish', {}, taskRootContext(taskTraceId));
    const headers = injectTraceContext(undefined, trace.setSpan(context.active(), publisher));
    expect(headers.get('traceparent')).toMatch(
      new RegExp(`^00-${taskTraceId}-${publisher.spanContext().spanId}-01$`),
    );

    const consumer = tracer.startSpan('consume', {}, extractTraceContext(headers));
    publisher.end();
    consumer.end();
    await processor.forceFlush();
    const spans = exporter.getFinishedSpans();
    const consumed = spans.find((s) => s.name === 'consume')!;
    expect(consumed.spanContext().traceId).toBe(taskTraceId);
    expect(consumed.parentSpanContext?.spanId).toBe(publisher.spanContext().spanId);
  });

  it('a message without trace headers yields a context without a span', () => {
    expect(trace.getSpan(extractTraceContext(undefined))).toBeUndefined();
  });

  it("a consumed task message's spans continue the trace it carries when that is the task's own trace", () => {
    const publisher = tracer.startSpan('publish', {}, taskRootContext(taskTraceId));
    const headers = injectTraceContext(undefined, trace.setSpan(context.active(), publisher));
    publisher.end();
    expect(trace.getSpanContext(taskParentContext(headers, taskTraceId))).toMatchObject({
      traceId: taskTraceId,
      spanId: publisher.spanContext().spanId,
    });
  });

  it("a consumed task message without trace headers, or carrying another trace, starts under the task's own trace", () => {
    const bare = trace.getSpanContext(taskParentContext(undefined, taskTraceId));
    expect(bare?.traceId).toBe(taskTraceId);

    const otherTraceId = '0af7651916cd43dd8448eb211c80319c';
    const foreign = tracer.startSpan('elsewhere', {}, taskRootContext(otherTraceId));
    const headers = injectTraceContext(undefined, trace.setSpan(context.active(), foreign));
    foreign.end();
    const parent = trace.getSpanContext(taskParentContext(headers, taskTraceId));
    expect(parent?.traceId).toBe(taskTraceId);
    expect(parent?.spanId).not.toBe(foreign.spanContext().spanId);
  });

  it('log lines written inside a span carry its trace_id and span_id', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const log = createLogger({ service: 'test', destination });
    const span = tracer.startSpan('work', {}, taskRootContext(taskTraceId));
    context.with(trace.setSpan(context.active(), span), () => log.info('inside'));
    span.end();
    expect(JSON.parse(lines[0]!)).toMatchObject({
      trace_id: taskTraceId,
      span_id: span.spanContext().spanId,
    });
  });
});
