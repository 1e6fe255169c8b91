/** JSON (de)serialisation of bus payloads, validated against their protocol schema on the way in. */
import type { z } from 'zod';
import { CorruptRecordError } from './errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson<S extends z.ZodType>(schema: S, data: Uint8Array, where: string): z.infer<S> {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(data));
  } catch (error) {
    throw new CorruptRecordError(where, { cause: error });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new CorruptRecordError(where, { cause: parsed.error });
  return parsed.data;
}
