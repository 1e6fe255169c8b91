/**
 * Task status writes → webhook deliveries. A durable consumer (`webhook-status`, shared by every gateway)
 * reads the stream behind KV `mesh_tasks`, which gets one write per phase change of a task, so the task
 * path itself does no webhook work. A write that is a webhook event (done, error, cancelled,
 * waiting_approval) becomes one delivery message per subscribed endpoint of the task's account on
 * MESH_WEBHOOKS, `Nats-Msg-Id` = `<webhook id>.1`: reading the same write twice queues nothing twice. The
 * status message is acknowledged only once its deliveries are stored, so a crash in between reads it again.
 *
 * A deployment without any webhook endpoint reads no status write at all: the consumer is created when the
 * first endpoint is registered (before it is stored, so no later status write is missed; a task's own
 * webhook needs a registered endpoint), and a gateway starts reading it once its mirror of the webhook keys
 * shows a key (or, while the mirror cannot say, once the consumer exists). Status writes were about one
 * in seven of a task's messages.
 */
import {
  durableConsumerExists,
  ensureDurableConsumer,
  runDurableConsumer,
  type DurableConsumerSpec,
  type KvMirror,
  type TaskWebhookStore,
  type WebhookStore,
} from '@agentmesh/bus';
import {
  isFinalTaskStatus,
  parseTaskStatusSubject,
  TaskStatusRecord,
  WebhookConsumers,
  webhookDeliverySubject,
  type WebhookDelivery,
} from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import {
  deliveryMessageId,
  eventOccurrence,
  taskWebhookPayload,
  webhookEventOf,
  webhookMessageId,
} from './webhook-events.js';

export interface StatusFanoutOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  endpoints: WebhookStore;
  taskWebhooks: TaskWebhookStore;
  publicBaseUrl: string | undefined;
  log: Logger;
  /**
   * A live copy of the `mesh_webhooks` keys (endpoints `<account>.<id>`, tasks' own webhooks
   * `<account>.task.<trace_id>`): a finished task of an account with neither costs no read of the bucket.
   * Without it (or while it cannot say), the bucket is read as before. Its groups must be
   * {@link webhookKeyGroup}'s.
   */
  webhookKeys?: WebhookKeys;
}

/** What the fan-out asks of the mirrored `mesh_webhooks` keys. */
export type WebhookKeys = Pick<KvMirror<unknown>, 'keys' | 'anyInGroup' | 'lookup'>;

/** The status consumer's settings when a gateway creates it; it starts at the writes after its creation. */
export const STATUS_CONSUMER: DurableConsumerSpec = {
  ...WebhookConsumers.STATUS,
  ackWaitMs: 30_000,
  batch: 100,
  maxAckPending: 1_000,
  deliverPolicy: DeliverPolicy.New,
};

/** How often a gateway that does not read the status consumer yet looks at its mirror of webhook keys. */
const WEBHOOK_KEYS_CHECK_MS = 1_000;

export interface StatusFanout {
  /**
   * Called before a webhook endpoint is stored: the shared consumer exists from then on (it keeps every
   * status write after it for the gateways to read), and this gateway reads it.
   */
  ensure(): Promise<void>;
  stop(): Promise<void>;
}

export async function startStatusFanout(options: StatusFanoutOptions): Promise<StatusFanout> {
  const { js, jsm, log } = options;
  const handle = async (message: JsMsg): Promise<void> => {
    try {
      const queued = await fanOut(options, message);
      message.ack();
      if (queued > 0) log.debug({ queued }, 'webhook deliveries queued');
    } catch (error) {
      log.warn({ err: error }, 'webhook deliveries of a status write could not be queued; trying again');
      message.nak(2_000);
    }
  };
  let reading: ReturnType<typeof runDurableConsumer> | undefined;
  let check: NodeJS.Timeout | undefined;
  let stopped = false;
  const read = (): void => {
    if (stopped) return;
    if (check !== undefined) clearInterval(check);
    check = undefined;
    reading ??= runDurableConsumer(js, jsm, STATUS_CONSUMER, handle, (error) =>
      log.warn({ err: error }, 'webhook status consumer failed; starting it again'),
    );
  };
  // Read once the deployment has an endpoint: the mirrored keys show one, or, while the mirror cannot
  // say (stale after a reconnect), the shared consumer a registration made exists. Never created here:
  // a NATS blip must not make a deployment without webhooks read every status write for good.
  const readIfNeeded = async (): Promise<void> => {
    const keys = options.webhookKeys?.keys();
    if (keys !== undefined && keys.length > 0) return read();
    if (await durableConsumerExists(jsm, STATUS_CONSUMER).catch(() => false)) read();
  };
  await readIfNeeded();
  if (reading === undefined) {
    check = setInterval(() => void readIfNeeded(), WEBHOOK_KEYS_CHECK_MS);
    check.unref();
  }
  return {
    async ensure() {
      await ensureDurableConsumer(jsm, STATUS_CONSUMER);
      read();
    },
    async stop() {
      stopped = true;
      if (check !== undefined) clearInterval(check);
      await reading?.stop();
    },
  };
}

async function fanOut(options: StatusFanoutOptions, message: JsMsg): Promise<number> {
  if (message.data.length === 0) return 0;
  // The subject names the task: when the mirrored keys show neither an endpoint of its account nor a
  // webhook of its own, the write queues nothing whatever it says, and neither its headers nor its
  // record are decoded (most status writes of most accounts: a parse per write was a measurable share
  // of a gateway's CPU).
  const task = parseTaskStatusSubject(message.subject);
  if (task !== undefined) {
    const known = webhookKeysOf(options.webhookKeys, task.accountId, task.traceId);
    if (known?.endpoints === false && !known.own) return 0;
  }
  const operation = message.headers?.get('KV-Operation');
  if (operation === 'DEL' || operation === 'PURGE') return 0;
  let raw: unknown;
  try {
    raw = message.json();
  } catch {
    raw = undefined;
  }
  const parsed = TaskStatusRecord.safeParse(raw);
  if (!parsed.success) {
    options.log.warn({ subject: message.subject }, 'a task status write does not fit the schema; no webhook');
    return 0;
  }
  const record = parsed.data;
  const event = webhookEventOf(record.status);
  if (event === undefined) return 0;
  const known = webhookKeysOf(options.webhookKeys, record.account_id, record.trace_id);
  // Listing an account's endpoints reads the bucket through a consumer of its own: only when it has any.
  const endpoints = known?.endpoints === false ? [] : await options.endpoints.list(record.account_id);
  const targets: Array<{ endpointId: string; url?: string }> = endpoints
    .filter((endpoint) => endpoint.events.includes(event))
    .map((endpoint) => ({ endpointId: endpoint.id }));
  const own =
    known?.own === false ? undefined : await options.taskWebhooks.get(record.account_id, record.trace_id);
  if (own !== undefined && own.events.includes(event))
    targets.push({ endpointId: own.endpoint_id, url: own.url });
  if (targets.length === 0 && own === undefined) return 0;
  const occurrence = eventOccurrence(event, message.seq);
  const payload = taskWebhookPayload(event, record, options.publicBaseUrl);
  const now = new Date().toISOString();
  for (const target of targets) {
    // A task's own webhook is a delivery of its own, apart from its endpoint's.
    const idSource = target.url === undefined ? target.endpointId : `${target.endpointId} ${target.url}`;
    const delivery: WebhookDelivery = {
      webhook_id: webhookMessageId(idSource, record.account_id, record.trace_id, event, occurrence),
      account_id: record.account_id,
      endpoint_id: target.endpointId,
      ...(target.url === undefined ? {} : { url: target.url }),
      payload,
      attempt: 1,
      created_at: now,
    };
    await options.js.publish(webhookDeliverySubject(record.account_id), JSON.stringify(delivery), {
      msgID: deliveryMessageId(delivery),
    });
  }
  // Queued: the task's own webhook has nothing more to deliver after its final event.
  if (own !== undefined && isFinalTaskStatus(record.status)) {
    await options.taskWebhooks.delete(record.account_id, record.trace_id);
  }
  return targets.length;
}

/**
 * The group a `mesh_webhooks` key counts in for the mirror: an endpoint's key `<account>.<id>` (one token
 * after the account) is its account's; a task's own webhook (`<account>.task.<trace_id>`) is in none.
 */
export function webhookKeyGroup(key: string): string | undefined {
  const dot = key.indexOf('.');
  return dot > 0 && !key.includes('.', dot + 1) ? key.slice(0, dot) : undefined;
}

/**
 * What the mirrored keys say of an account's endpoints and a task's own webhook; undefined: unknown. Asked
 * on every status write, so neither walks the keys: the endpoints are counted per account as they come
 * and go (webhookKeyGroup), the task's webhook is one lookup.
 */
export function webhookKeysOf(
  keys: WebhookKeys | undefined,
  accountId: string,
  traceId: string,
): { endpoints: boolean; own: boolean } | undefined {
  const endpoints = keys?.anyInGroup(accountId);
  if (keys === undefined || endpoints === undefined) return undefined;
  const own = keys.lookup(`${accountId}.task.${traceId}`);
  if (own.state === 'unknown') return undefined;
  return { endpoints, own: own.state === 'present' };
}
