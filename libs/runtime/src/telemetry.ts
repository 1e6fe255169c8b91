/**
 * OpenTelemetry for services: the NodeSDK configured from the standard `OTEL_*` variables. Spans are
 * always recorded (so trace and span ids reach logs and NATS headers), and exported only when an
 * exporter is configured (`OTEL_TRACES_EXPORTER`, or an OTLP endpoint). Metrics are recorded and exported
 * only when `OTEL_METRICS_EXPORTER` names an exporter (or readers are passed); otherwise the global meter
 * provider stays the API's no-op one and instruments cost nothing.
 */
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

export interface Telemetry {
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  service: string;
  /** The standard OTEL_* variables (read by the SDK); passed so the choice of exporter is explicit. */
  env: Record<string, string | undefined>;
  /** Extra processors, e.g. an in-memory exporter in tests. */
  spanProcessors?: SpanProcessor[];
  /** Metric readers to use instead of those `OTEL_METRICS_EXPORTER` names, e.g. an in-memory one in tests. */
  metricReaders?: NodeSDKConfiguration['metricReaders'];
}

function exporterConfigured(env: Record<string, string | undefined>): boolean {
  const chosen = env.OTEL_TRACES_EXPORTER?.trim();
  if (chosen) return chosen !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export function startTelemetry({ service, env, spanProcessors, metricReaders }: TelemetryOptions): Telemetry {
  const fromEnv = exporterConfigured(env);
  const sdk = new NodeSDK({
    serviceName: service,
    textMapPropagator: new W3CTraceContextPropagator(),
    // Without an exporter the SDK would default to OTLP on localhost; a no-op processor keeps spans
    // recorded (real ids) but sends them nowhere.
    ...(fromEnv ? {} : { spanProcessors: spanProcessors ?? [new NoopSpanProcessor()] }),
    ...(fromEnv && spanProcessors ? { spanProcessors } : {}),
    // Logs go through pino, and metrics are opt-in: without an explicit choice the SDK would push both
    // to an OTLP endpoint on localhost.
    ...(env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
    ...(metricReaders ? { metricReaders } : env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    instrumentations: [],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
