/**
 * A JetStream publish that survives an outage: a try that got no answer in time (the server away or
 * paused, the request or its answer lost across a reconnect) is sent again with the same
 * `Nats-Msg-Id`, a few times with a growing pause. If an earlier try was stored after all, the stream
 * answers the later one as a duplicate of it (with its sequence), so the message is stored once. Any
 * other error (a refusal, a closed connection) is not retried: it would only be refused again.
 */
import type { JetStreamClient, JetStreamPublishOptions, PubAck } from '@nats-io/jetstream';
import { errors } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { PublishUnconfirmedError } from './errors.js';

export interface PublishRetry {
  /** Tries in all, the first included. */
  readonly attempts: number;
  /** Pause before each further try; the last one repeats. */
  readonly delaysMs: readonly number[];
  /** Told before each further try, with the timeout that ended the previous one. */
  readonly onRetry?: (retry: { readonly attempt: number; readonly error: Error }) => void;
}

/** Four tries over about 3.5 s of pauses plus the publish timeouts: a reconnect or a leader election. */
export const DEFAULT_PUBLISH_RETRY: PublishRetry = { attempts: 4, delaysMs: [250, 1_000, 2_000] };

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
  for (let attempt = 1; ; attempt++) {
    try {
      const ack = await js.publish(subject, payload, options);
      return { ack, retried: attempt > 1 };
    } catch (error) {
      if (!(error instanceof errors.TimeoutError)) throw error;
      if (attempt >= attempts) throw new PublishUnconfirmedError(subject, attempt, { cause: error });
      retry.onRetry?.({ attempt: attempt + 1, error });
      const delays = retry.delaysMs;
      await sleep(delays[Math.min(attempt - 1, delays.length - 1)] ?? 0);
    }
  }
}
