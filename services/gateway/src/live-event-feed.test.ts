import { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { storedEventOf } from './live-event-feed.js';
import { formatSseEvent } from './sse-stream.js';

const TRACE = '0123456789abcdef0123456789abcdef';
const OTHER_TRACE = 'fedcba9876543210fedcba9876543210';

const done = {
  trace_id: TRACE,
  seq: 7,
  ts: '2026-11-28T08:00:00.000Z',
  attempt: 1,
  type: 'done',
  data: {
    message: 'answer',
    steps: 2,
    usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    duration_ms: 12,
  },
} as const;

const bytes = (value: unknown): Uint8Array =>
  new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

describe('an event the live feed takes in from the stream', () => {
  it('when written as the executors write it, becomes the same frame a replay sends, without a second serialisation', () => {
    const stored = storedEventOf(bytes(done), TRACE);
    expect(stored?.event).toEqual(TaskEvent.parse(done));
    expect(stored?.frame).toBe(formatSseEvent(TaskEvent.parse(done)));
  });

  it('when its JSON spans lines, is written again on one line so the frame keeps one data line', () => {
    const stored = storedEventOf(bytes(JSON.stringify(done, null, 2)), TRACE);
    expect(stored?.frame).toBe(formatSseEvent(TaskEvent.parse(done)));
  });

  it('when it is not an event of this task (corrupt, another trace, no seq, an unknown type, no data), is refused', () => {
    expect(storedEventOf(bytes('{"trace_id":'), TRACE)).toBeUndefined();
    expect(storedEventOf(bytes([done]), TRACE)).toBeUndefined();
    expect(storedEventOf(bytes(done), OTHER_TRACE)).toBeUndefined();
    expect(storedEventOf(bytes({ ...done, seq: 0 }), TRACE)).toBeUndefined();
    expect(storedEventOf(bytes({ ...done, seq: '7' }), TRACE)).toBeUndefined();
    expect(storedEventOf(bytes({ ...done, type: 'surprise' }), TRACE)).toBeUndefined();
    expect(storedEventOf(bytes({ ...done, data: null }), TRACE)).toBeUndefined();
  });
});
