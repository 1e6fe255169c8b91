/**
 * A durable pull consumer read in a loop that outlives NATS outages: the consumer is created when missing
 * (an existing one keeps its own settings; `ensureDurableConsumer` creates one ahead of any reader), its
 * messages handed to `handle`, and a failed `consume` (the server restarted, the consumer was deleted)
 * started again after a pause until `stop`. Used by the gateways' webhook consumers and the executors'
 * consumer of MAX_DELIVERIES advisories.
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { setTimeout as sleep } from 'node:timers/promises';
import { isJetStreamApiError } from './jetstream-api-error.js';

export interface DurableConsumerSpec {
  stream: string;
  durable_name: string;
  /** None: every subject of the stream. */
  filter_subject?: string;
  ackWaitMs: number;
  /** Messages held client-side ahead of `handle`. */
  batch: number;
  /**
   * Messages delivered and not yet acknowledged, at most. A delivery waiting for its retry is one of them
   * (put off with a delayed nak), so this bounds the retries that can wait at once.
   */
  maxAckPending: number;
  /** Where a newly created consumer starts; a status consumer starts at new writes. */
  deliverPolicy?: DeliverPolicy;
}

export interface RunningConsumer {
  stop(): Promise<void>;
}

/** The consumer's settings when this code creates it (an existing one keeps its own). */
function consumerConfig(spec: DurableConsumerSpec): Partial<ConsumerConfig> {
  return {
    durable_name: spec.durable_name,
    ...(spec.filter_subject === undefined ? {} : { filter_subject: spec.filter_subject }),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: spec.deliverPolicy ?? DeliverPolicy.All,
    ack_wait: spec.ackWaitMs * 1_000_000,
    // Attempts are counted in the messages themselves (webhooks) or do not run out (status reads).
    max_deliver: -1,
    max_ack_pending: spec.maxAckPending,
  };
}

/** Whether the durable consumer exists (false also when the stream does not). */
export async function durableConsumerExists(
  jsm: JetStreamManager,
  spec: DurableConsumerSpec,
): Promise<boolean> {
  try {
    await jsm.consumers.info(spec.stream, spec.durable_name);
    return true;
  } catch (error) {
    if (isJetStreamApiError(error, JetStreamApiCodes.ConsumerNotFound, JetStreamApiCodes.StreamNotFound))
      return false;
    throw error;
  }
}

/**
 * Creates the durable consumer unless it exists; from then on it keeps what reaches its stream for
 * whoever reads it. For a consumer that must exist before something happens (a status consumer that
 * starts at new writes must exist before the first write it is to see).
 */
export async function ensureDurableConsumer(jsm: JetStreamManager, spec: DurableConsumerSpec): Promise<void> {
  if (!(await durableConsumerExists(jsm, spec))) await jsm.consumers.add(spec.stream, consumerConfig(spec));
}

export function runDurableConsumer(
  js: JetStreamClient,
  jsm: JetStreamManager,
  spec: DurableConsumerSpec,
  handle: (message: JsMsg) => void | Promise<void>,
  /** Told why `consume` failed, before it is started again (libraries do not log). */
  onRestart: (error: unknown) => void,
): RunningConsumer {
  let stopped = false;
  let current: ConsumerMessages | undefined;
  const wake = new AbortController();
  const loop = (async () => {
    while (!stopped) {
      try {
        await ensureDurableConsumer(jsm, spec);
        const consumer = await js.consumers.get(spec.stream, spec.durable_name);
        current = await consumer.consume({ max_messages: spec.batch });
        if (stopped) current.stop();
        for await (const message of current) await handle(message);
      } catch (error) {
        if (stopped) break;
        onRestart(error);
      }
      if (!stopped) await sleep(1_000, undefined, { signal: wake.signal }).catch(() => undefined);
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake.abort();
      current?.stop();
      await loop;
    },
  };
}
