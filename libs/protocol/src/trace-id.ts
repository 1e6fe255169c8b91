// The task id IS its W3C/OpenTelemetry trace id: 32 lowercase hex, not all zeros. Upstreams that think in
// UUIDs (seed 001's Java gateway) may send one; it is normalised to the same 128 bits without dashes.
import { z } from 'zod';
import { ErrorCode } from './errors.js';

const TRACE_ID_PATTERN = /^(?!0{32}$)[0-9a-f]{32}$/;
const TRACE_ID_INPUT_PATTERN =
  /^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/;

const TRACE_ID_MESSAGE = 'trace_id must be 32 lowercase hex characters and not all zeros (a W3C trace id)';
const TRACE_ID_INPUT_MESSAGE =
  'trace_id must be 32 hex characters or a UUID (8-4-4-4-12 hex with dashes), not all zeros';

/** The canonical trace id, as it travels on the bus. */
export const TraceId = z.string().regex(TRACE_ID_PATTERN, TRACE_ID_MESSAGE);
export type TraceId = z.infer<typeof TraceId>;

/** A trace id as an upstream may send it (any case, or a UUID with dashes); parses to the canonical form. */
export const TraceIdInput = z
  .string()
  .regex(TRACE_ID_INPUT_PATTERN, TRACE_ID_INPUT_MESSAGE)
  .transform((value) => value.replaceAll('-', '').toLowerCase())
  .pipe(TraceId);
export type TraceIdInput = z.input<typeof TraceIdInput>;

/** Thrown when code hands a malformed trace id to {@link normaliseTraceId}. */
export class InvalidTraceIdError extends Error {
  readonly code = ErrorCode.INVALID_REQUEST;
  readonly retryable = false;

  constructor(readonly input: string) {
    super(`${TRACE_ID_INPUT_MESSAGE}; got ${JSON.stringify(input.slice(0, 80))}`);
    this.name = 'InvalidTraceIdError';
  }
}

export function isTraceId(value: unknown): value is TraceId {
  return typeof value === 'string' && TRACE_ID_PATTERN.test(value);
}

/** Canonical form of an upstream trace id (32 hex any case, or a dashed UUID). */
export function normaliseTraceId(input: string): TraceId {
  const parsed = TraceIdInput.safeParse(input);
  if (!parsed.success) throw new InvalidTraceIdError(input);
  return parsed.data;
}

/** A fresh random trace id: 128 random bits from Web Crypto (no node import, so it runs anywhere). */
export function newTraceId(): TraceId {
  const bytes = new Uint8Array(16);
  do {
    globalThis.crypto.getRandomValues(bytes);
  } while (bytes.every((byte) => byte === 0));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
