import type { EventData, EventType, TaskEvent } from '@agentmesh/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SecretScrubber } from './secrets/index.js';
import {
  coalescingMinChars,
  coalescingWindowMs,
  DEFAULT_DELTA_COALESCING,
  TaskEventSink,
  type EventAppender,
} from './task-event-sink.js';

/** Appends events in memory; each publish is acknowledged when the test says so (or at once). */
class MemoryAppender implements EventAppender {
  readonly events: { type: string; data: unknown }[] = [];
  readonly unacked: (() => void)[] = [];
  seq = 0;
  constructor(private ackAtOnce = true) {}

  async emit<T extends EventType>(type: T, data: EventData<T>): Promise<Extract<TaskEvent, { type: T }>> {
    if (!this.ackAtOnce) await new Promise<void>((resolve) => this.unacked.push(resolve));
    this.seq += 1;
    this.events.push({ type, data });
    return { trace_id: 't', seq: this.seq, ts: '', attempt: 1, type, data } as Extract<
      TaskEvent,
      { type: T }
    >;
  }

  /** Acknowledges the publish waiting now, and every later one at once. */
  release(): void {
    this.ackAtOnce = true;
    for (const ack of this.unacked.splice(0)) ack();
  }
}

const chunks = (appender: MemoryAppender) =>
  appender.events.filter((event) => event.type === 'message_chunk').map((event) => event.data);
const delta = (text: string) => ({ type: 'message_chunk' as const, data: { delta: text } });
const done = { type: 'done' as const, data: { message: 'hi', steps: 1, usage: usage(), duration_ms: 1 } };

function usage() {
  return { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
}

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('coalescing streamed deltas', () => {
  it('when deltas stream, the first leaves at once and the rest of its window leave as one event when the window ends', async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      windowMs: 50,
      maxChars: 4096,
    });
    sink.emit(delta('Hel'));
    await vi.advanceTimersByTimeAsync(0);
    expect(chunks(appender)).toEqual([{ delta: 'Hel' }]);

    for (const piece of ['lo', ', ', 'wor']) sink.emit(delta(piece));
    await vi.advanceTimersByTimeAsync(49);
    expect(chunks(appender)).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(chunks(appender)).toEqual([{ delta: 'Hel' }, { delta: 'lo, wor' }]);

    sink.emit(delta('ld'));
    await sink.finish(done);
    expect(
      chunks(appender)
        .map((data) => (data as { delta: string }).delta)
        .join(''),
    ).toBe('Hello, world');
    expect(appender.events.at(-1)?.type).toBe('done');
  });

  it('when 2,000 deltas arrive at once, they leave as a handful of events of at most the size limit, in order', async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      windowMs: 50,
      maxChars: 4096,
    });
    const pieces = Array.from({ length: 2_000 }, (_, i) => `t${i % 10} `);
    for (const piece of pieces) sink.emit(delta(piece));
    await sink.finish(done);
    const texts = chunks(appender).map((data) => (data as { delta: string }).delta);
    expect(texts.join('')).toBe(pieces.join(''));
    expect(texts.length).toBeLessThanOrEqual(Math.ceil(pieces.join('').length / 4096) + 2);
    expect(Math.max(...texts.slice(0, -1).map((text) => text.length))).toBeLessThanOrEqual(4096);
  });

  it('when another event comes between deltas, the pending text is published before it', async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      windowMs: 50,
      maxChars: 4096,
    });
    sink.emit(delta('a'));
    sink.emit(delta('b'));
    sink.emit({ type: 'tool_start', data: { call_id: 'c1', tool: 'search', arguments: {} } });
    sink.emit({ type: 'tool_thinking', data: { delta: 'hmm' } });
    sink.emit(delta('c'));
    await sink.finish(done);
    expect(appender.events.map((event) => [event.type, (event.data as { delta?: string }).delta])).toEqual([
      ['message_chunk', 'a'],
      ['message_chunk', 'b'],
      ['tool_start', undefined],
      ['tool_thinking', 'hmm'],
      ['message_chunk', 'c'],
      ['done', undefined],
    ]);
  });

  it('when a secret is split across deltas of different windows, no event carries any part of it', async () => {
    const appender = new MemoryAppender();
    const secret = 'sk-canary-0123456789';
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber([secret]), {
      windowMs: 50,
      maxChars: 4096,
    });
    sink.emit(delta('key: sk-can'));
    await vi.advanceTimersByTimeAsync(60);
    sink.emit(delta('ary-0123'));
    await vi.advanceTimersByTimeAsync(60);
    sink.emit(delta('456789 ok'));
    await sink.finish(done);
    const texts = chunks(appender).map((data) => (data as { delta: string }).delta);
    expect(texts.join('')).toBe('key: [REDACTED] ok');
    for (const text of texts) expect(text).not.toMatch(/sk-can|0123|6789/);
  });

  it('when two tool calls stream their arguments interleaved with a secret split across windows, each call gets its own deltas, coalesced and scrubbed, before the tool_start', async () => {
    const appender = new MemoryAppender();
    const secret = 'sk-canary-0123456789';
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber([secret]), {
      windowMs: 50,
      maxChars: 4096,
    });
    const piece = (call_id: string, text: string) => ({
      type: 'tool_call_delta' as const,
      data: { call_id, tool: call_id === 'c1' ? 'search' : 'fetch', delta: text },
    });
    sink.emit(piece('c1', '{"q":"sk-can'));
    sink.emit(piece('c2', '{"u":"'));
    await vi.advanceTimersByTimeAsync(60);
    sink.emit(piece('c1', 'ary-0123'));
    await vi.advanceTimersByTimeAsync(60);
    sink.emit(piece('c2', 'x"}'));
    sink.emit(piece('c1', '456789"}'));
    sink.emit(piece('c1', ''));
    sink.emit({
      type: 'tool_start',
      data: { call_id: 'c1', tool: 'search', arguments: { q: '[REDACTED]' } },
    });
    await sink.finish(done);
    const deltas = appender.events.filter((event) => event.type === 'tool_call_delta');
    const textOf = (callId: string) =>
      deltas
        .map((event) => event.data as { call_id: string; tool: string; delta: string })
        .filter((data) => data.call_id === callId)
        .map((data) => data.delta);
    expect(textOf('c1').join('')).toBe('{"q":"[REDACTED]"}');
    expect(textOf('c2').join('')).toBe('{"u":"x"}');
    for (const text of textOf('c1')) expect(text).not.toMatch(/sk-can|0123|6789/);
    expect(deltas.every((event) => (event.data as { tool: string }).tool !== '')).toBe(true);
    const startAt = appender.events.findIndex((event) => event.type === 'tool_start');
    expect(appender.events.findLastIndex((event) => event.type === 'tool_call_delta')).toBeLessThan(startAt);
  });

  it('when publishes are not acknowledged, text keeps gathering and the model stream is told to wait until they drain', async () => {
    const appender = new MemoryAppender(false);
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), { windowMs: 50, maxChars: 8 });
    expect(sink.backpressure()).toBeUndefined();
    for (let i = 0; i < 200; i++) sink.emit(delta('0123'));
    const wait = sink.backpressure();
    expect(wait).toBeInstanceOf(Promise);
    let resumed = false;
    void wait!.then(() => (resumed = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(resumed).toBe(false);
    appender.release();
    await wait;
    expect(resumed).toBe(true);
    expect(sink.backpressure()).toBeUndefined();
    await sink.finish(done);
    expect(
      chunks(appender)
        .map((data) => (data as { delta: string }).delta)
        .join(''),
    ).toBe('0123'.repeat(200));
  });
});

describe('coalescing by size, adaptively', () => {
  const texts = (appender: MemoryAppender) =>
    chunks(appender).map((data) => (data as { delta: string }).delta);

  /** Streams `tokens` five-character tokens at 50 a second (one every 20 ms), as a paced model does. */
  async function streamAtModelPace(sink: TaskEventSink, tokens: number): Promise<string> {
    let answer = '';
    for (let i = 0; i < tokens; i++) {
      const token = `w${String(i % 1000).padStart(3, '0')} `;
      answer += token;
      sink.emit(delta(token));
      await vi.advanceTimersByTimeAsync(20);
    }
    return answer;
  }

  it('when a busy executor streams a 300-token answer at 50 tokens/s, it leaves as a handful of events, not one per window', async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      ...DEFAULT_DELTA_COALESCING,
      load: () => 100,
    });
    const answer = await streamAtModelPace(sink, 300);
    await sink.finish(done);
    expect(texts(appender).join('')).toBe(answer);
    // 1,500 characters by 256, and the first token that left at once.
    expect(texts(appender).length).toBeLessThanOrEqual(8);
    expect(texts(appender)[0]).toBe('w000 ');
  });

  it('when the executor runs one task, the same answer streams in smaller events, each at most a window late', async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      ...DEFAULT_DELTA_COALESCING,
      load: () => 1,
    });
    const arrivals: number[] = [];
    const answer = await (async () => {
      let text = '';
      for (let i = 0; i < 300; i++) {
        const token = `w${String(i % 1000).padStart(3, '0')} `;
        text += token;
        sink.emit(delta(token));
        await vi.advanceTimersByTimeAsync(20);
        while (arrivals.length < texts(appender).length) arrivals.push(i);
      }
      return text;
    })();
    await sink.finish(done);
    expect(texts(appender).join('')).toBe(answer);
    // Six seconds of text in 250 ms windows: about 24 events, every token out within a window.
    expect(texts(appender).length).toBeGreaterThan(8);
    const gaps = arrivals.slice(1).map((token, i) => token - arrivals[i]!);
    // A window of 250 ms is 12.5 tokens: a token waits at most one window (and the token it ends in).
    expect(Math.max(...gaps)).toBeLessThanOrEqual(Math.ceil(250 / 20));
  });

  it('when gathered text reaches the size threshold, it leaves before its window ends', async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      windowMs: 10_000,
      busyWindowMs: 10_000,
      minChars: 10,
    });
    sink.emit(delta('first'));
    await vi.advanceTimersByTimeAsync(0);
    sink.emit(delta('01234'));
    await vi.advanceTimersByTimeAsync(0);
    expect(texts(appender)).toEqual(['first']);
    sink.emit(delta('56789'));
    await vi.advanceTimersByTimeAsync(0);
    expect(texts(appender)).toEqual(['first', '0123456789']);
  });

  it('when the window ends while the previous event is not stored yet, the text leaves as soon as it is, joined with what came meanwhile', async () => {
    const appender = new MemoryAppender(false);
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      windowMs: 50,
      busyWindowMs: 50,
    });
    sink.emit(delta('a'));
    sink.emit(delta('b'));
    await vi.advanceTimersByTimeAsync(60);
    sink.emit(delta('c'));
    await vi.advanceTimersByTimeAsync(0);
    expect(appender.events).toHaveLength(0);
    appender.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(texts(appender)).toEqual(['a', 'bc']);
  });

  it('when the model reasons and then answers, the first delta of each leaves at once', async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), { windowMs: 10_000 });
    sink.emit({ type: 'tool_thinking', data: { delta: 'think' } });
    sink.emit({ type: 'tool_thinking', data: { delta: 'ing' } });
    sink.emit(delta('Answer'));
    await vi.advanceTimersByTimeAsync(0);
    expect(appender.events.map((event) => (event.data as { delta: string }).delta)).toEqual([
      'think',
      'ing',
      'Answer',
    ]);
  });

  it('the window grows linearly with the tasks in flight, from the quiet window to the busy one', () => {
    const coalescing = { ...DEFAULT_DELTA_COALESCING, windowMs: 200, busyWindowMs: 1_600, busyTasks: 8 };
    expect(coalescingWindowMs(coalescing, 1)).toBe(200);
    expect(coalescingWindowMs(coalescing, 0)).toBe(200);
    expect(coalescingWindowMs(coalescing, 4)).toBe(800);
    expect(coalescingWindowMs(coalescing, 8)).toBe(1_600);
    expect(coalescingWindowMs(coalescing, 500)).toBe(1_600);
    expect(coalescingWindowMs({ ...coalescing, busyWindowMs: 10 }, 500)).toBe(200);
  });

  it('the size threshold grows with the window, up to the longest event', () => {
    const coalescing = { ...DEFAULT_DELTA_COALESCING, windowMs: 250, minChars: 256, maxChars: 4_096 };
    expect(coalescingMinChars(coalescing, 250)).toBe(256);
    expect(coalescingMinChars(coalescing, 1_000)).toBe(1_024);
    expect(coalescingMinChars(coalescing, 100_000)).toBe(4_096);
    expect(coalescingMinChars({ ...coalescing, maxChars: 1 }, 250)).toBe(1);
  });

  it("when a busy executor gets a fast model's long answer, it leaves in events of thousands of characters", async () => {
    const appender = new MemoryAppender();
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber(), {
      ...DEFAULT_DELTA_COALESCING,
      load: () => 64,
    });
    const pieces = Array.from({ length: 2_000 }, () => 'tok ');
    for (const [i, piece] of pieces.entries()) {
      sink.emit(delta(piece));
      // Each publish is stored before the next delta: the chain never holds text back.
      if (i % 10 === 0) await vi.advanceTimersByTimeAsync(1);
    }
    await sink.finish(done);
    expect(texts(appender).join('')).toBe(pieces.join(''));
    // 8,000 characters by 2,048 (the busy threshold), and the first delta.
    expect(texts(appender).length).toBeLessThanOrEqual(6);
  });
});

describe('write-ahead', () => {
  const toolStart = (id: string) => ({
    type: 'tool_start' as const,
    data: { call_id: id, tool: 'pay', arguments: { amount: 1 } },
  });

  it('emitDurably resolves only after the writer has stored the event and every event before it', async () => {
    const appender = new MemoryAppender(false);
    const sink = new TaskEventSink(appender, () => {}, new SecretScrubber());
    sink.emit(toolStart('c1'));
    let stored = false;
    const durable = sink.emitDurably(toolStart('c2')).then(() => (stored = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(stored).toBe(false);

    appender.release();
    await durable;
    expect(appender.events.map((event) => (event.data as { call_id: string }).call_id)).toEqual(['c1', 'c2']);
  });

  it('emitDurably rejects when the publish fails, and the failure is reported once', async () => {
    const failure = new Error('stream lost');
    const failing: EventAppender = {
      seq: 0,
      emit: () => Promise.reject(failure),
    };
    const reported: unknown[] = [];
    const sink = new TaskEventSink(failing, (error) => reported.push(error), new SecretScrubber());

    await expect(sink.emitDurably(toolStart('c1'))).rejects.toBe(failure);
    await expect(sink.emitDurably(toolStart('c2'))).rejects.toBe(failure);
    expect(reported).toEqual([failure]);
  });
});
