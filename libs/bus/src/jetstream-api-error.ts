/**
 * One test for "JetStream refused this with one of these codes", the refusals the bus expects and handles
 * (no message found, a stream missing, a wrong last sequence), so each call site names its codes and
 * nothing else.
 */
import { JetStreamApiError } from '@nats-io/jetstream';

/** Whether `error` is JetStream's answer with one of `codes` (`JetStreamApiCodes`). */
export function isJetStreamApiError(error: unknown, ...codes: number[]): error is JetStreamApiError {
  return error instanceof JetStreamApiError && codes.includes(error.code);
}
