import { describe, expect, it } from 'vitest';
import {
  InvalidTraceIdError,
  TraceId,
  TraceIdInput,
  isTraceId,
  newTraceId,
  normaliseTraceId,
} from './trace-id.js';

describe('trace ids', () => {
  it('a new trace id is 32 lowercase hex and a valid TraceId', () => {
    const id = newTraceId();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(TraceId.safeParse(id).success).toBe(true);
  });

  it('new trace ids are distinct', () => {
    const ids = new Set(Array.from({ length: 1000 }, newTraceId));
    expect(ids.size).toBe(1000);
  });

  it('a UUID with dashes from seed 001 normalises to its 32 hex digits, lowercased', () => {
    expect(normaliseTraceId('3F2B8C1E-9D4A-4E6B-8F1C-2A7D5E9B0C13')).toBe('3f2b8c1e9d4a4e6b8f1c2a7d5e9b0c13');
    expect(TraceIdInput.parse('bdb78b62-6c48-11f0-af96-fa8dcc0a06b2')).toBe(
      'bdb78b626c4811f0af96fa8dcc0a06b2',
    );
  });

  it('32 upper-case hex normalise to lower case; a canonical id is unchanged', () => {
    expect(normaliseTraceId('4BF92F3577B34DA6A3CE929D0E0E4736')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(normaliseTraceId('4bf92f3577b34da6a3ce929d0e0e4736')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it.each([
    ['too short', 'abc123'],
    ['not hex', 'z'.repeat(32)],
    ['all zeros (invalid in W3C trace context)', '0'.repeat(32)],
    ['an all-zero UUID', '00000000-0000-0000-0000-000000000000'],
    ['dashes in the wrong places', '3f2b8c1e9d4a-4e6b-8f1c-2a7d5e9b0c13'],
    ['empty', ''],
  ])('%s is rejected with a clear error', (_case, input) => {
    expect(() => normaliseTraceId(input)).toThrow(InvalidTraceIdError);
    expect(() => normaliseTraceId(input)).toThrow(/trace_id must be 32 hex characters or a UUID/);
    expect(TraceIdInput.safeParse(input).success).toBe(false);
  });

  it('the bus form accepts only the canonical form', () => {
    expect(TraceId.safeParse('4BF92F3577B34DA6A3CE929D0E0E4736').success).toBe(false);
    expect(TraceId.safeParse('3f2b8c1e-9d4a-4e6b-8f1c-2a7d5e9b0c13').success).toBe(false);
    expect(isTraceId('4bf92f3577b34da6a3ce929d0e0e4736')).toBe(true);
    expect(isTraceId(42)).toBe(false);
  });

  it('the invalid-trace-id error carries the INVALID_REQUEST code and is not retryable', () => {
    const error = (() => {
      try {
        normaliseTraceId('nope');
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toMatchObject({ code: 'INVALID_REQUEST', retryable: false, input: 'nope' });
  });
});
