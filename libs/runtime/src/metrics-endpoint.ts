/**
 * A service's own Prometheus endpoint (`http://METRICS_HOST:METRICS_PORT/metrics`): OpenTelemetry's
 * PrometheusExporter as the metric reader, its HTTP server bound by the runtime before the service
 * starts, so a port that is taken stops start-up with an error naming it. The SDK's own handling of
 * `OTEL_METRICS_EXPORTER=prometheus` would bind one fixed port (9464) in every service — only the first
 * gets it, and the others' failure goes to OpenTelemetry's silent diagnostic logger — so that value is
 * accepted only together with METRICS_PORT, and served here.
 */
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { ConfigError } from './config.js';

/** The config variables that decide whether and where metrics are served. */
export interface MetricsSettings {
  METRICS_PORT?: number | undefined;
  METRICS_HOST: string;
  OTEL_METRICS_EXPORTER?: string | undefined;
}

export interface MetricsEndpointAddress {
  host: string;
  port: number;
}

/** What {@link metricsPlan} decided: where the endpoint listens (if anywhere). */
export interface MetricsPlan {
  endpoint: MetricsEndpointAddress | undefined;
}

const STANDALONE_EXPORTERS = new Set(['prometheus', 'none']);

/**
 * Checks the metrics variables together. Throws a {@link ConfigError} for a combination that would
 * otherwise fail quietly: `prometheus` without a port of its own, or METRICS_PORT beside an exporter
 * that pushes (`otlp`, `console`), which the SDK cannot run next to a reader given by the runtime.
 */
export function metricsPlan(settings: MetricsSettings): MetricsPlan {
  const exporters = (settings.OTEL_METRICS_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const port = settings.METRICS_PORT;
  if (port === undefined) {
    if (exporters.includes('prometheus')) {
      throw new ConfigError([
        {
          variable: 'OTEL_METRICS_EXPORTER',
          message:
            '`prometheus` needs METRICS_PORT: each service serves /metrics on a port of its own (give every service a different one)',
        },
      ]);
    }
    return { endpoint: undefined };
  }
  const pushing = exporters.filter((name) => !STANDALONE_EXPORTERS.has(name));
  if (pushing.length > 0) {
    throw new ConfigError([
      {
        variable: 'METRICS_PORT',
        message: `serves metrics for Prometheus and cannot be combined with OTEL_METRICS_EXPORTER=${pushing.join(',')}; unset one of them`,
      },
    ]);
  }
  if (exporters.includes('none')) {
    throw new ConfigError([
      {
        variable: 'METRICS_PORT',
        message: 'is set while OTEL_METRICS_EXPORTER=none turns metrics off; unset one of them',
      },
    ]);
  }
  return { endpoint: { host: settings.METRICS_HOST, port } };
}

/** The Prometheus endpoint's port could not be bound (taken, or not allowed). Start-up stops. */
export class MetricsPortError extends Error {
  override readonly name = 'MetricsPortError';
  readonly code = 'SERVICE_UNAVAILABLE';
  readonly retryable = false;

  constructor(
    readonly address: MetricsEndpointAddress,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(
      `the metrics endpoint cannot listen on ${address.host}:${address.port} (METRICS_PORT=${address.port}, METRICS_HOST=${address.host}): ${reason}; choose a free port for this service`,
      options,
    );
  }
}

/** A Prometheus reader for the telemetry and the HTTP server behind it, bound by {@link listen}. */
export class MetricsEndpoint {
  readonly reader: PrometheusExporter;

  constructor(readonly address: MetricsEndpointAddress) {
    this.reader = new PrometheusExporter({
      host: address.host,
      port: address.port,
      endpoint: '/metrics',
      preventServerStart: true,
    });
  }

  /** `http://host:port/metrics` (an IPv6 host in brackets). */
  get url(): string {
    const host = this.address.host.includes(':') ? `[${this.address.host}]` : this.address.host;
    return `http://${host}:${this.address.port}/metrics`;
  }

  /** Binds the port; rejects with a {@link MetricsPortError} when it cannot. */
  async listen(): Promise<string> {
    try {
      await this.reader.startServer();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const reason =
        code === 'EADDRINUSE'
          ? 'the port is already in use'
          : code === 'EACCES'
            ? 'permission denied'
            : code === 'EADDRNOTAVAIL'
              ? 'no such address on this host'
              : error instanceof Error
                ? error.message
                : String(error);
      throw new MetricsPortError(this.address, reason, { cause: error });
    }
    return this.url;
  }
}
