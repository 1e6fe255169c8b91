/**
 * Completion webhooks, the gateway's room for them: the endpoint and dead-letter stores, the SSRF-guarded
 * sender, the status fan-out and the delivery worker (both durable JetStream consumers shared by every
 * gateway that runs them, WEBHOOKS_ENABLED), and the management routes. README "Webhooks" tells the contract.
 */
import {
  KvMirror,
  TaskWebhookStore,
  WebhookDeadLetterStore,
  WebhookStore,
  type ConnectionEvents,
  type CredentialKeys,
  type MeshBuckets,
} from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { GatewayConfig } from '../config.js';
import { DeliveryWorker } from './delivery-worker.js';
import { RetrySchedule } from './retry-schedule.js';
import { ensureDurableConsumer } from '@agentmesh/bus';
import { STATUS_CONSUMER, startStatusFanout, webhookKeyGroup } from './status-fanout.js';
import { TaskWebhooks } from './task-webhooks.js';
import { WebhookSender } from './webhook-sender.js';
import type { WebhookRouteDeps } from './webhook-routes.js';

export { registerWebhookRoutes } from './webhook-routes.js';
export type { WebhookRouteDeps } from './webhook-routes.js';

export interface Webhooks {
  routes: WebhookRouteDeps;
  /** Checks and keeps the `webhook` of task submissions. */
  taskWebhooks: TaskWebhooks;
  stop(): Promise<void>;
}

export interface WebhookOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  buckets: Pick<MeshBuckets, 'webhooks' | 'webhookDeadLetters'>;
  keys: CredentialKeys;
  config: Pick<
    GatewayConfig,
    | 'WEBHOOKS_ENABLED'
    | 'WEBHOOK_ALLOW_HOSTS'
    | 'WEBHOOK_RETRY_SCHEDULE_MS'
    | 'WEBHOOK_TIMEOUT_MS'
    | 'WEBHOOK_CONNECT_TIMEOUT_MS'
    | 'WEBHOOK_MAX_IN_FLIGHT'
    | 'WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT'
    | 'PUBLIC_BASE_URL'
  >;
  log: Logger;
  /** The connection the buckets are used through, so the keys mirror follows its reconnects. */
  connection?: ConnectionEvents;
}

/** Webhook keys held in memory at most; past it the fan-out reads the bucket as before. */
const WEBHOOK_KEYS_MIRRORED = 100_000;

export async function startWebhooks(options: WebhookOptions): Promise<Webhooks> {
  const { js, jsm, config, log } = options;
  const endpoints = new WebhookStore(options.buckets.webhooks, options.keys);
  const deadLetters = new WebhookDeadLetterStore(options.buckets.webhookDeadLetters);
  const taskWebhookStore = new TaskWebhookStore(options.buckets.webhooks);
  const sender = new WebhookSender({
    allowHosts: config.WEBHOOK_ALLOW_HOSTS,
    connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
  });
  const stops: Array<() => Promise<void>> = [];
  // A gateway that does not deliver webhooks still makes sure the status consumer exists before an
  // endpoint registered through it is stored: the gateways that deliver read it.
  let ensureStatusConsumer = () => ensureDurableConsumer(jsm, STATUS_CONSUMER);
  if (config.WEBHOOKS_ENABLED) {
    // Only the keys are used (never a value: endpoints' secrets stay in the bucket).
    const webhookKeys = await KvMirror.start<true>({
      kv: options.buckets.webhooks,
      decode: () => true,
      maxEntries: WEBHOOK_KEYS_MIRRORED,
      groupOf: webhookKeyGroup,
      ...(options.connection === undefined ? {} : { connection: options.connection }),
      onEvent: (event) => {
        if (event.type === 'stale') log.debug({ reason: event.reason }, 'webhook keys mirror stale');
      },
    });
    const fanout = await startStatusFanout({
      js,
      jsm,
      endpoints,
      taskWebhooks: taskWebhookStore,
      publicBaseUrl: config.PUBLIC_BASE_URL,
      log,
      webhookKeys,
    });
    ensureStatusConsumer = () => fanout.ensure();
    stops.push(async () => webhookKeys.stop());
    const worker = new DeliveryWorker({
      js,
      jsm,
      endpoints,
      deadLetters,
      sender,
      schedule: new RetrySchedule(config.WEBHOOK_RETRY_SCHEDULE_MS),
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
      maxInFlightPerAccount: config.WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT,
      log,
    });
    worker.start();
    stops.push(
      () => fanout.stop(),
      () => worker.stop(),
    );
  }
  return {
    routes: { endpoints, deadLetters, sender, js, ensureStatusConsumer },
    taskWebhooks: new TaskWebhooks(endpoints, taskWebhookStore),
    async stop() {
      // The worker closes the sender itself, once it stopped reading; without it, nothing is in flight.
      await Promise.all(stops.map((stop) => stop()));
      if (stops.length === 0) await sender.close();
    },
  };
}
