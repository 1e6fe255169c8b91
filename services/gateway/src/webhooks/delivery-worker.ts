/**
 * Delivers the messages of MESH_WEBHOOKS (durable consumer `webhooks`, shared by every gateway): one signed
 * POST per message through the SSRF guard. A 2xx acknowledges it. A failure queues the same delivery again
 * as the next attempt, not before the retry schedule's delay (`not_before`; an early redelivery is put off
 * with a delayed nak), and acknowledges this one; after the last attempt, or when the guard refuses the
 * target, the delivery becomes a dead letter (KV `mesh_webhook_dead_letters`) an operator can re-drive.
 * Attempts are counted in the message itself, so putting a message off (not yet due, or its account busy)
 * never uses one up.
 *
 * Fairness: at most `maxInFlightPerAccount` deliveries of one account run at once here (and
 * `maxInFlight` in all); a message of a busy account is put off for a moment, so an account whose endpoint
 * hangs holds its own slots only and other accounts' deliveries go on. Deliveries run beside the read
 * loop, never in it.
 */
import {
  runDurableConsumer,
  type RunningConsumer,
  type WebhookDeadLetterStore,
  type WebhookStore,
} from '@agentmesh/bus';
import {
  WebhookConsumers,
  WebhookDelivery,
  webhookDeliverySubject,
  type WebhookDeadLetter,
} from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { RetrySchedule } from './retry-schedule.js';
import { deliveryMessageId } from './webhook-events.js';
import type { WebhookSender } from './webhook-sender.js';

export interface DeliveryWorkerOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  endpoints: WebhookStore;
  deadLetters: WebhookDeadLetterStore;
  sender: WebhookSender;
  schedule: RetrySchedule;
  timeoutMs: number;
  maxInFlight: number;
  maxInFlightPerAccount: number;
  log: Logger;
}

/**
 * Deliveries held by the consumer at once, those waiting for a retry included (see README, "Webhooks":
 * past it, new deliveries wait in the stream until retries fall due).
 */
const MAX_WAITING_DELIVERIES = 100_000;

/** How long a message of a busy account is put off before it is looked at again. */
const BUSY_DELAY_MS = 500;

export class DeliveryWorker {
  readonly #options: DeliveryWorkerOptions;
  readonly #perAccount = new Map<string, number>();
  readonly #running = new Set<Promise<void>>();
  #inFlight = 0;
  #stopping = false;
  #consumer: RunningConsumer | undefined;

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
  }

  start(): void {
    const { js, jsm, log, timeoutMs } = this.#options;
    this.#consumer = runDurableConsumer(
      js,
      jsm,
      // Longer than an attempt can take, so a message is redelivered only when its gateway died.
      {
        ...WebhookConsumers.DELIVERIES,
        ackWaitMs: timeoutMs + 30_000,
        batch: 64,
        maxAckPending: MAX_WAITING_DELIVERIES,
      },
      (message) => this.#take(message),
      (error) => log.warn({ err: error }, 'webhook delivery consumer failed; starting it again'),
    );
  }

  /**
   * Stops reading and ends the attempts in flight without spending them: their messages are put back
   * for another gateway (an attempt to a hanging endpoint would otherwise outlast the shutdown budget).
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#consumer?.stop();
    await this.#options.sender.close();
    await Promise.allSettled([...this.#running]);
  }

  #take(message: JsMsg): void {
    let raw: unknown;
    try {
      raw = message.json();
    } catch {
      raw = undefined;
    }
    const parsed = WebhookDelivery.safeParse(raw);
    if (!parsed.success) {
      this.#options.log.warn(
        { seq: message.seq },
        'a webhook delivery message does not fit the schema; dropped',
      );
      message.term('malformed');
      return;
    }
    const delivery = parsed.data;
    const due = delivery.not_before === undefined ? 0 : Date.parse(delivery.not_before) - Date.now();
    if (due > 0) {
      message.nak(due);
      return;
    }
    const busy = this.#perAccount.get(delivery.account_id) ?? 0;
    if (busy >= this.#options.maxInFlightPerAccount || this.#inFlight >= this.#options.maxInFlight) {
      message.nak(BUSY_DELAY_MS + Math.floor(Math.random() * BUSY_DELAY_MS));
      return;
    }
    this.#perAccount.set(delivery.account_id, busy + 1);
    this.#inFlight++;
    const run = this.#attempt(delivery, message)
      .catch((error: unknown) => {
        // NATS or KV out of reach: this message is tried again later, its attempt not used up.
        this.#options.log.warn(
          { err: error, webhook_id: delivery.webhook_id },
          'webhook delivery interrupted',
        );
        message.nak(2_000);
      })
      .finally(() => {
        this.#inFlight--;
        const left = (this.#perAccount.get(delivery.account_id) ?? 1) - 1;
        if (left <= 0) this.#perAccount.delete(delivery.account_id);
        else this.#perAccount.set(delivery.account_id, left);
        this.#running.delete(run);
      });
    this.#running.add(run);
  }

  async #attempt(delivery: WebhookDelivery, message: JsMsg): Promise<void> {
    const { endpoints, sender, schedule, log } = this.#options;
    const context = {
      webhook_id: delivery.webhook_id,
      account_id: delivery.account_id,
      endpoint_id: delivery.endpoint_id,
      type: delivery.payload.type,
      attempt: delivery.attempt,
    };
    const target = await endpoints.target(delivery.account_id, delivery.endpoint_id);
    if (target === undefined) {
      log.info(context, 'webhook endpoint deleted; delivery dropped');
      message.ack();
      return;
    }
    const outcome = await sender.send(
      delivery.url ?? target.endpoint.url,
      delivery.webhook_id,
      JSON.stringify(delivery.payload),
      target.secrets,
    );
    if (outcome.ok) {
      log.info({ ...context, status: outcome.status }, 'webhook delivered');
      message.ack();
      return;
    }
    if (this.#stopping) {
      message.nak();
      return;
    }
    const failed = { ...delivery, last_error: outcome.error.slice(0, 1000) };
    const delay = outcome.permanent ? undefined : schedule.delayAfter(delivery.attempt);
    if (delay === undefined) {
      const letter: WebhookDeadLetter = {
        delivery: failed,
        reason: outcome.permanent
          ? `refused by the SSRF guard: ${outcome.error}`.slice(0, 1000)
          : `no success after ${delivery.attempt} attempts; last: ${outcome.error}`.slice(0, 1000),
        dead_at: new Date().toISOString(),
      };
      await this.#options.deadLetters.put(letter);
      log.warn({ ...context, reason: letter.reason }, 'webhook delivery dead-lettered');
      message.ack();
      return;
    }
    const next: WebhookDelivery = {
      ...failed,
      attempt: delivery.attempt + 1,
      not_before: new Date(Date.now() + delay).toISOString(),
    };
    await this.#options.js.publish(webhookDeliverySubject(delivery.account_id), JSON.stringify(next), {
      msgID: deliveryMessageId(next),
    });
    log.info(
      { ...context, error: outcome.error, retry_in_ms: delay },
      'webhook delivery failed; retry queued',
    );
    message.ack();
  }
}
