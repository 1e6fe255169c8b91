/**
 * A JetStream read tried again while the cluster says it is "temporarily unavailable" (err_code 10008: a
 * stream or meta leader being elected after a node's loss or pause). Such a read fails for seconds and
 * then works; a caller that failed at once would spend a delivery of its task on it (the executor's first
 * read of a task's log, before it does anything). A read that timed out is not tried again here: it
 * already waited its timeout.
 */
import { JetStreamApiError } from '@nats-io/jetstream';
import { setTimeout as sleep } from 'node:timers/promises';

/** JetStream's "JetStream system temporarily unavailable". */
const TEMPORARILY_UNAVAILABLE = 10_008;
const PAUSES_MS = [250, 500, 1_000, 2_000] as const;

export function isJetStreamUnavailable(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === TEMPORARILY_UNAVAILABLE;
}

/** `read()`, tried again after a pause while JetStream is unavailable, for up to `withinMs`. */
export async function readWhileJetStreamRecovers<T>(read: () => Promise<T>, withinMs = 10_000): Promise<T> {
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (!isJetStreamUnavailable(error) || Date.now() - started >= withinMs) throw error;
      await sleep(PAUSES_MS[Math.min(attempt, PAUSES_MS.length - 1)]);
    }
  }
}
