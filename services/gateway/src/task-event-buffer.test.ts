import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { TaskEventBuffer, type BufferedEvent } from './task-event-buffer.js';

const SUBJECT = 'mesh.events.acme.0123456789abcdef0123456789abcdef';

function event(seq: number, terminal = false): BufferedEvent {
  return { seq, terminal, frame: `id: ${seq}\nevent: ${terminal ? 'done' : 'message_chunk'}\ndata: {}\n\n` };
}

function filled(...seqs: number[]): TaskEventBuffer {
  const buffer = new TaskEventBuffer(SUBJECT);
  for (const seq of seqs) buffer.append(event(seq));
  return buffer;
}

describe('a task event buffer', () => {
  it('holds events taken in order, serves the one after a cursor, and covers only cursors from its first event on', () => {
    const buffer = filled(3, 4, 5);
    expect(buffer).toMatchObject({ from: 3, last: 5, held: 3 });
    expect(buffer.bytes).toBe(event(3).frame.length + event(4).frame.length + event(5).frame.length);
    expect(buffer.covers(1)).toBe(false);
    expect(buffer.covers(2)).toBe(true);
    expect(buffer.eventAfter(2)?.seq).toBe(3);
    expect(buffer.eventAfter(4)?.seq).toBe(5);
    expect(buffer.eventAfter(5)).toBeUndefined();
    expect(buffer.eventAfter(1)).toBeUndefined();
  });

  it('ignores an event it already vouches for, and starts over at an event beyond a gap', () => {
    const buffer = filled(1, 2);
    expect(buffer.append(event(2))).toBe(0);
    expect(buffer.append(event(1))).toBe(0);
    expect(buffer).toMatchObject({ from: 1, last: 2, held: 2 });

    buffer.append(event(5));
    expect(buffer).toMatchObject({ from: 5, last: 5, held: 1 });
    expect(buffer.bytes).toBe(event(5).frame.length);
    expect(buffer.covers(2)).toBe(false);
    expect(buffer.covers(4)).toBe(true);
  });

  it('takes nothing in after the terminal event', () => {
    const buffer = filled(1);
    buffer.append(event(2, true));
    expect(buffer.finished).toBe(true);
    expect(buffer.append(event(3))).toBe(0);
    expect(buffer).toMatchObject({ last: 2, held: 2 });
  });

  it('without events, vouches from the seq after what the stream held, and knows when that was the terminal event', () => {
    const empty = new TaskEventBuffer(SUBJECT);
    expect(empty.covers(0)).toBe(false);
    empty.startAfter(0, false);
    expect(empty.covers(0)).toBe(true);
    expect(empty.eventAfter(0)).toBeUndefined();
    // An event stored before the lookup that arrives after it is not taken twice.
    const late = new TaskEventBuffer(SUBJECT);
    late.startAfter(2, false);
    expect(late.append(event(2))).toBe(0);
    late.append(event(3));
    expect(late).toMatchObject({ from: 3, last: 3, held: 1 });

    const ended = new TaskEventBuffer(SUBJECT);
    ended.startAfter(4, true);
    expect(ended).toMatchObject({ from: 5, last: 4, finished: true });
    expect(ended.covers(3)).toBe(false);
    // A buffer that already has events keeps what they say.
    const seen = filled(1);
    seen.startAfter(7, true);
    expect(seen).toMatchObject({ from: 1, last: 1, finished: false });
  });

  it('dropping its oldest events moves the cursor it covers from and frees their bytes', () => {
    const buffer = filled(...Array.from({ length: 200 }, (_, i) => i + 1));
    const before = buffer.bytes;
    let freed = 0;
    for (let i = 0; i < 150; i++) freed += buffer.dropOldest();
    expect(buffer).toMatchObject({ from: 151, last: 200, held: 50 });
    expect(buffer.bytes).toBe(before - freed);
    expect(buffer.covers(149)).toBe(false);
    expect(buffer.eventAfter(150)?.seq).toBe(151);
    expect(buffer.eventAfter(199)?.seq).toBe(200);
  });

  it('a waiting follower wakes at the next change, when the buffer is dropped, or when its signal aborts', async () => {
    const buffer = filled(1);
    const woken: string[] = [];
    const never = new AbortController().signal;
    const first = buffer.changed(never).then(() => woken.push('event'));
    buffer.append(event(2));
    buffer.wake();
    await first;

    const aborted = new AbortController();
    const second = buffer.changed(aborted.signal).then(() => woken.push('abort'));
    aborted.abort();
    await second;

    const third = buffer.changed(never).then(() => woken.push('drop'));
    expect(buffer.drop()).toBeGreaterThan(0);
    await third;
    expect(woken).toEqual(['event', 'abort', 'drop']);
    expect(buffer).toMatchObject({ dropped: true, held: 0, bytes: 0 });
    expect(buffer.covers(5)).toBe(false);
    await buffer.changed(never);
  });

  it('when a follower waits on many changes with one signal, the signal holds one abort listener, and aborting it ends every wait still pending', async () => {
    const stop = new AbortController();
    const first = filled(1);
    const second = filled(1);
    let ended = 0;
    const waits = [first, second, first, second, first].map((buffer) =>
      buffer.changed(stop.signal).then(() => ended++),
    );
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(1);
    // Woken waits leave the pending set: only those of `second` are left for the abort.
    first.append(event(2));
    first.wake();
    await Promise.all([waits[0], waits[2], waits[4]]);
    expect(ended).toBe(3);
    stop.abort();
    await Promise.all(waits);
    expect(ended).toBe(5);
  });
});
