/**
 * KV keys may only hold `[-/_=.a-zA-Z0-9]`, and `.` separates tokens. Free-form segments (user ids,
 * credential names, idempotency keys) are therefore encoded; protocol-validated tokens (account ids,
 * trace ids, workflow ids) are used as they are.
 */
import { createHash } from 'node:crypto';

export function encodeKeySegment(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url') || '_';
}

export function decodeKeySegment(segment: string): string {
  return segment === '_' ? '' : Buffer.from(segment, 'base64url').toString('utf8');
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

export async function collect<T>(iterator: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterator) out.push(item);
  return out;
}
