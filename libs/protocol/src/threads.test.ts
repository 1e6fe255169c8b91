import { describe, expect, it } from 'vitest';
import { InvalidSubjectTokenError } from './names.js';
import {
  estimateTokens,
  parseThreadApiSubject,
  threadApiSubject,
  threadEntriesSubject,
  threadHistory,
  retainedEntries,
  CreateThreadRequest,
  ThreadApiRequest,
  ThreadRetention,
  type StoredThreadEntry,
} from './threads.js';
import { SubmitTaskRequest } from './gateway.js';

const T1 = 'a'.repeat(32);
const T2 = 'b'.repeat(32);
const at = '2026-11-28T00:00:00Z';

describe('threads', () => {
  it('when a thread or account id would widen a subject, the builders refuse it', () => {
    expect(threadEntriesSubject('acme', 't-1')).toBe('mesh.threads.acme.t-1');
    expect(() => threadEntriesSubject('acme', 't.*')).toThrow(InvalidSubjectTokenError);
    expect(() => threadEntriesSubject('ac>me', 't1')).toThrow(InvalidSubjectTokenError);
    expect(threadApiSubject('acme')).toBe('mesh.gateway.threads.acme');
    expect(parseThreadApiSubject('mesh.gateway.threads.acme')).toEqual({ accountId: 'acme' });
    expect(parseThreadApiSubject('mesh.gateway.threads.acme.x')).toBeUndefined();
    expect(parseThreadApiSubject('mesh.gateway.submit.acme')).toBeUndefined();
  });

  it('when a compaction is stored, later history is its summary and the turns from its cut on', () => {
    const entries: StoredThreadEntry[] = [
      { seq: 3, entry: { type: 'turn', trace_id: T1, at, messages: [{ role: 'user', content: 'old' }] } },
      { seq: 7, entry: { type: 'turn', trace_id: T2, at, messages: [{ role: 'user', content: 'kept' }] } },
      { seq: 9, entry: { type: 'compaction', keep_from_seq: 7, method: 'summary', summary: 'S', at } },
    ];
    expect(threadHistory(entries)).toEqual([
      { role: 'system', content: 'Summary of the earlier conversation:\nS' },
      { role: 'user', content: 'kept' },
    ]);
    const cut = entries.slice(0, 2).concat({
      seq: 9,
      entry: { type: 'compaction', keep_from_seq: 10, method: 'cut', at },
    });
    expect(threadHistory(cut)).toEqual([]);
  });

  it('when a retention is set, entries older than its age and turns before its last N are not kept', () => {
    const turn = (seq: number, when: string, content: string): StoredThreadEntry => ({
      seq,
      entry: { type: 'turn', trace_id: T1, at: when, messages: [{ role: 'user', content }] },
    });
    const entries = [
      turn(2, '2026-11-27T00:00:00Z', 'day old'),
      turn(5, '2026-11-28T09:00:00Z', 'hour old'),
      turn(6, '2026-11-28T09:59:00Z', 'minute old'),
    ];
    const now = new Date('2026-11-28T10:00:00Z');
    expect(retainedEntries(entries, undefined, now)).toEqual(entries);
    expect(retainedEntries(entries, { max_age_seconds: 2 * 3600 }, now).map((e) => e.seq)).toEqual([5, 6]);
    expect(retainedEntries(entries, { max_turns: 1 }, now).map((e) => e.seq)).toEqual([6]);
    expect(retainedEntries(entries, { max_turns: 5 }, now).map((e) => e.seq)).toEqual([2, 5, 6]);
    // Both: whichever keeps less.
    expect(
      retainedEntries(entries, { max_age_seconds: 86_400 * 2, max_turns: 2 }, now).map((e) => e.seq),
    ).toEqual([5, 6]);
    expect(retainedEntries(entries, { max_age_seconds: 30 }, now)).toEqual([]);
  });

  it('when a retention is empty, negative, fractional or beyond the stream age, it is refused', () => {
    for (const bad of [
      {},
      { max_turns: 0 },
      { max_age_seconds: -1 },
      { max_turns: 1.5 },
      { max_age_seconds: 31 * 86_400 },
      { max_days: 1 },
    ]) {
      expect(ThreadRetention.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    expect(CreateThreadRequest.safeParse({ retention: { max_turns: 3 } }).success).toBe(true);
  });

  it('estimates tokens as characters / 4', () => {
    expect(estimateTokens([{ role: 'user', content: 'x'.repeat(100) }])).toBe(
      Math.ceil(JSON.stringify({ role: 'user', content: 'x'.repeat(100) }).length / 4),
    );
  });

  it('when a submission names a thread and a strategy, they are checked; without them it is seed 001 as before', () => {
    const base = { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] };
    expect(SubmitTaskRequest.parse(base)).not.toHaveProperty('thread_id');
    expect(SubmitTaskRequest.safeParse({ ...base, thread_id: 'a.b' }).success).toBe(false);
    expect(SubmitTaskRequest.safeParse({ ...base, thread_id: 't', thread_strategy: 'shout' }).success).toBe(
      false,
    );
    expect(SubmitTaskRequest.parse({ ...base, thread_id: 't', thread_strategy: 'enqueue' })).toMatchObject({
      thread_id: 't',
      thread_strategy: 'enqueue',
    });
  });

  it('when a NATS threads request names an unknown op or a bad id, it does not parse', () => {
    expect(ThreadApiRequest.safeParse({ op: 'drop' }).success).toBe(false);
    expect(ThreadApiRequest.safeParse({ op: 'get', thread_id: '*' }).success).toBe(false);
    expect(ThreadApiRequest.parse({ op: 'create' })).toEqual({ op: 'create', body: {} });
  });
});
