/**
 * A JetStream publish that survives an outage: a try that got no answer in time (the server away or
 * paused, the request or its answer lost across a reconnect) is sent again with the same
 * `Nats-Msg-Id`, a few times with a growing pause. If an earlier try was stored after all, the stream
 * answers the later one as a duplicate of it (with its sequence), so the message is stored once.
 *
 * A try answered "no responders" (nats.js: `JetStreamNotEnabled`) reached no stream at all: in a cluster,
 * the stream's subject has no listener while a node that led it is gone and a new leader is elected. It
 * cannot have been stored, so it is sent again too, with the same pauses, for up to
 * `noRespondersWithinMs` after the first try (such answers come at once, so a count of tries alone would
 * give up within the pauses, before an election is over). Any other error (a refusal, a closed
 * connection) is not retried: it would only be refused again.
 */
import type { JetStreamClient, JetStreamPublishOptions, PubAck } from '@nats-io/jetstream';
import { errors } from '@nats-io/transport-node';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PublishUnconfirmedError } from './errors.js';

export interface PublishRetry {
  /** Tries in all, the first included. */
  readonly attempts: number;
  /** Pause before each further try; the last one repeats. */
  readonly delaysMs: readonly number[];
  /**
   * How long after the first try a "no responders" answer is still tried again (beyond `attempts`).
   * None: only `attempts` tries.
   */
  readonly noRespondersWithinMs?: number;
  /** Told before each further try, with the error that ended the previous one. */
  readonly onRetry?: (retry: { readonly attempt: number; readonly error: Error }) => void;
}

/**
 * Four tries over about 3.5 s of pauses plus the publish timeouts (a reconnect); answers of no responders
 * tried again for 12 s (a stream leader election after a node's loss).
 */
export const DEFAULT_PUBLISH_RETRY: PublishRetry = {
  attempts: 4,
  delaysMs: [250, 1_000, 2_000],
  noRespondersWithinMs: 12_000,
};

export interface ConfirmedPublish {
  readonly ack: PubAck;
  /** An earlier try got no answer: a duplicate ack may be that try's own message. */
  readonly retried: boolean;
}

/**
 * Publishes `payload` once `msgID` is stored; see the module header. Throws
 * {@link PublishUnconfirmedError} when no try was answered, and any other error as it came.
 */
export async function publishWithRetry(
  js: JetStreamClient,
  subject: string,
  payload: Uint8Array,
  options: Partial<JetStreamPublishOptions> & { msgID: string },
  retry: PublishRetry = DEFAULT_PUBLISH_RETRY,
): Promise<ConfirmedPublish> {
  const attempts = Math.max(1, retry.attempts);
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    try {
      const ack = await js.publish(subject, payload, options);
      return { ack, retried: attempt > 1 };
    } catch (error) {
      const noResponders = isNoRespondersAnswer(error);
      if (!(error instanceof errors.TimeoutError) && !noResponders) throw error;
      const mayTryAgain =
        attempt < attempts ||
        (noResponders && performance.now() - started < (retry.noRespondersWithinMs ?? 0));
      if (!mayTryAgain) throw new PublishUnconfirmedError(subject, attempt, { cause: error });
      retry.onRetry?.({ attempt: attempt + 1, error: error as Error });
      const delays = retry.delaysMs;
      await sleep(delays[Math.min(attempt - 1, delays.length - 1)] ?? 0);
    }
  }
}

/** nats.js's answer to a JetStream publish nobody listened to: `JetStreamNotEnabled` from no responders. */
function isNoRespondersAnswer(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== 'JetStreamNotEnabled') return false;
  return error.cause instanceof errors.RequestError && error.cause.isNoResponders();
}
