/**
 * One test for "JetStream refused this with one of these codes", the refusals the bus expects and handles
 * (no message found, a stream missing, a wrong last sequence), so each call site names its codes and
 * nothing else.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';

/** Whether `error` is JetStream's answer with one of `codes` (`JetStreamApiCodes`). */
export function isJetStreamApiError(error: unknown, ...codes: number[]): error is JetStreamApiError {
  return error instanceof JetStreamApiError && codes.includes(error.code);
}

/**
 * JetStream's answer to a KV write whose expected revision is not the key's last one (somebody wrote in
 * between); the KV client reports `create` on an existing key the same way (10164 when the server cannot
 * tell the sequence). The signal a compare-and-set loop reads again and retries on.
 */
export function isLostCompareAndSet(error: unknown): boolean {
  return isJetStreamApiError(
    error,
    JetStreamApiCodes.StreamWrongLastSequence,
    JetStreamApiCodes.StreamWrongLastSequenceUnknown,
  );
}
