import { describe, expect, it } from 'vitest';
import { CallerKind } from './auth.js';
import { RateLimited } from './errors.js';
import { eventStreamCaller, EventStreamSlots, type EventStreamSlot } from './event-stream-slots.js';

describe('event stream slots', () => {
  it('a caller at its cap is refused with RATE_LIMITED and Retry-After while another caller is not; a release frees one slot once', () => {
    const slots = new EventStreamSlots({ maxStreams: 10, maxStreamsPerCaller: 2 });
    const first = slots.take('a') as EventStreamSlot;
    slots.take('a');
    const refused = slots.take('a');
    expect(refused).toBeInstanceOf(RateLimited);
    expect((refused as RateLimited).httpStatus).toBe(429);
    expect((refused as RateLimited).headers).toEqual({ 'retry-after': '5' });
    expect((refused as RateLimited).toBody().detail).toEqual({ scope: 'caller', limit: 2 });
    expect(slots.take('b')).not.toBeInstanceOf(RateLimited);
    expect(slots.open).toBe(3);

    first.release();
    first.release();
    expect(slots.open).toBe(2);
    expect(slots.take('a')).not.toBeInstanceOf(RateLimited);
    expect(slots.take('a')).toBeInstanceOf(RateLimited);
  });

  it('at the gateway cap every caller is refused until a stream ends', () => {
    const slots = new EventStreamSlots({ maxStreams: 2, maxStreamsPerCaller: 2 });
    const a = slots.take('a') as EventStreamSlot;
    slots.take('b');
    expect((slots.take('c') as RateLimited).toBody().detail).toEqual({ scope: 'gateway', limit: 2 });
    a.release();
    expect(slots.take('c')).not.toBeInstanceOf(RateLimited);
  });

  it('an API key caller counts by the digest of its key; admin and trusted callers by account', () => {
    const keyOne = { kind: CallerKind.API_KEY, accountId: 'acme', keyDigest: 'a'.repeat(64) };
    const keyTwo = { kind: CallerKind.API_KEY, accountId: 'acme', keyDigest: 'b'.repeat(64) };
    expect(eventStreamCaller(keyOne, 'acme')).not.toBe(eventStreamCaller(keyTwo, 'acme'));
    expect(eventStreamCaller({ kind: CallerKind.ADMIN, accountId: 'acme' }, 'acme')).toBe('account:acme');
    expect(eventStreamCaller({ kind: CallerKind.TRUSTED }, 'beta')).toBe('account:beta');
  });
});
