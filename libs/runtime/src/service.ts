/**
 * The life cycle every service shares: parse config once, start telemetry, create the logger, bind the
 * metrics endpoint when METRICS_PORT asks for one (a port that cannot be bound is fatal), connect
 * to NATS, start (again, with backoff, while NATS/JetStream is unavailable), and on SIGTERM/SIGINT stop the service's own work first, then drain the NATS
 * connection, flush telemetry and exit.
 */
import {
  PermissionViolationError,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import type { z } from 'zod';
import { baseConfigSchema, ConfigError, loadConfig, type BaseConfig } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { MetricsEndpoint, metricsPlan, type MetricsPlan } from './metrics-endpoint.js';
import { natsConnectionOptions } from './nats-connection.js';
import { retryStartup } from './startup-retry.js';
import { connectWithTurnBatching } from './nats-transport.js';
import { startTelemetry } from './telemetry.js';

export interface ServiceContext<C> {
  config: Readonly<C>;
  log: Logger;
  nc: NatsConnection;
}

/** What a started service hands back: how to stop its own work (consumers, HTTP servers, …). */
export interface RunningService {
  stop(): Promise<void>;
}

export interface ServiceDefinition<S extends z.ZodType<BaseConfig>> {
  name: string;
  configSchema?: S;
  start(ctx: ServiceContext<z.infer<S>>): Promise<RunningService>;
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Runs a service until a termination signal. Exits 0 after a clean shutdown, 1 when start-up fails or
 * the shutdown does not finish within `SHUTDOWN_TIMEOUT_MS`.
 */
export async function runService<S extends z.ZodType<BaseConfig>>(
  definition: ServiceDefinition<S>,
): Promise<void> {
  let config: Readonly<z.infer<S>>;
  let natsOptions: NodeConnectionOptions;
  let metrics: MetricsPlan;
  try {
    config = loadConfig((definition.configSchema ?? baseConfigSchema) as S);
    natsOptions = natsConnectionOptions({ settings: config, name: definition.name });
    metrics = metricsPlan(config);
  } catch (error) {
    const message = error instanceof ConfigError ? error.message : String(error);
    process.stderr.write(`${definition.name}: ${message}\n`);
    process.exit(1);
  }

  const metricsEndpoint = metrics.endpoint ? new MetricsEndpoint(metrics.endpoint) : undefined;
  const telemetry = startTelemetry({
    service: definition.name,
    env: process.env,
    ...(metricsEndpoint ? { metricReaders: [metricsEndpoint.reader] } : {}),
  });
  const log = createLogger({ service: definition.name, level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  let nc: NatsConnection | undefined;
  let running: RunningService | undefined;
  let stopping = false;

  // A signal during start-up ends its wait for NATS at once.
  const startupAbort = new AbortController();

  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    startupAbort.abort();
    log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      log.error({ timeout_ms: config.SHUTDOWN_TIMEOUT_MS }, 'shutdown timed out');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    try {
      await running?.stop();
      await nc?.drain();
      await telemetry.shutdown();
      log.info('service stopped');
      clearTimeout(timer);
      process.exit(0);
    } catch (error) {
      log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  // Listen before anything else: a signal that arrives while the service starts must not kill it
  // with the default action, half-started.
  for (const signal of SIGNALS) process.once(signal, () => void shutdown(signal));

  try {
    // Bound before NATS: a taken port is a mistake in this service's settings, reported at once.
    if (metricsEndpoint) log.info({ url: await metricsEndpoint.listen() }, 'metrics served');
    nc = await connectWithTurnBatching(natsOptions);
    reportRefusals(nc, log);
    if (stopping) return;
    const connection = nc;
    running = await retryStartup(() => definition.start({ config, log, nc: connection }), {
      timeoutMs: config.STARTUP_TIMEOUT_MS,
      signal: startupAbort.signal,
      onWait: ({ attempt, error, delayMs, waitedMs }) =>
        log.warn(
          { err: error, attempt, retry_in_ms: delayMs, waited_ms: waitedMs },
          'start-up waits for NATS/JetStream to become available; retrying',
        ),
    });
    // "ready" means the server knows the service's subscriptions: a subscribe is only queued on the
    // socket, and a request sent the moment readiness is seen would otherwise find no responder.
    await nc.flush();
  } catch (error) {
    // A signal ended the wait for NATS: the shutdown under way exits.
    if (stopping) return;
    log.fatal({ err: error }, 'start-up failed');
    process.exit(1);
  }
  if (!stopping) log.info({ nats: nc.getServer(), inbox_prefix: natsOptions.inboxPrefix }, 'service ready');
}

/**
 * Logs every operation the server refuses (a permission violation): nats.js reports one that no request
 * waits for (a plain publish, a subscription) only on the status stream, and a missing permission
 * should show in the service's own log, not only in the server's.
 */
function reportRefusals(nc: NatsConnection, log: Logger): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'error' && status.error instanceof PermissionViolationError) {
        const { operation, subject, queue } = status.error;
        log.warn({ operation, subject, ...(queue ? { queue } : {}) }, 'NATS refused an operation');
      }
    }
  })();
}
