import { describe, expect, it } from 'vitest';
import { AccountEventTail, TAIL_OVERFLOW_COMMENT } from './account-event-tail.js';
import type { AccountEventListener } from './live-event-feed.js';

/** A source of account events: what the live feed hands a tail, driven by the test. */
function accountSource() {
  const listeners = new Set<AccountEventListener>();
  return {
    listeners,
    followAccount(_accountId: string, listener: AccountEventListener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    send: (frame: string) => listeners.forEach((listener) => listener(frame)),
  };
}

async function take(iterator: AsyncIterator<string>, count: number): Promise<string[]> {
  const frames: string[] = [];
  for (let i = 0; i < count; i++) {
    const next = await iterator.next();
    if (next.done) break;
    frames.push(next.value);
  }
  return frames;
}

describe('AccountEventTail', () => {
  it('yields the frames sent after it was made, in order, including those sent while the reader waited', async () => {
    const source = accountSource();
    const tail = new AccountEventTail(source, 'acme', {
      maxPendingBytes: 1024,
      signal: new AbortController().signal,
    });
    const iterator = tail[Symbol.asyncIterator]();
    source.send('a\n\n');
    source.send('b\n\n');
    const waiting = take(iterator, 3);
    source.send('c\n\n');

    expect(await waiting).toEqual(['a\n\n', 'b\n\n', 'c\n\n']);
  });

  it('when the reader falls more than maxPendingBytes behind, the queue is dropped, the tail ends with the overflow comment and stops following', async () => {
    const source = accountSource();
    const tail = new AccountEventTail(source, 'acme', {
      maxPendingBytes: 10,
      signal: new AbortController().signal,
    });
    source.send('12345\n\n');
    source.send('12345\n\n');

    expect(await take(tail[Symbol.asyncIterator](), 5)).toEqual([TAIL_OVERFLOW_COMMENT]);
    expect(tail.fellBehind).toBe(true);
    expect(source.listeners.size).toBe(0);
  });

  it('ends when its signal aborts while the reader waits, and stops following', async () => {
    const source = accountSource();
    const stop = new AbortController();
    const tail = new AccountEventTail(source, 'acme', { maxPendingBytes: 1024, signal: stop.signal });
    const waiting = tail[Symbol.asyncIterator]().next();
    stop.abort();

    expect(await waiting).toEqual({ done: true, value: undefined });
    expect(source.listeners.size).toBe(0);
  });
});
