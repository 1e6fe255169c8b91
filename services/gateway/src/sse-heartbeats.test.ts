import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { joinHeartbeats } from './sse-heartbeats.js';

describe('shared SSE heartbeats', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('when streams write nothing, each gets one ping per interval, all from one timer', () => {
    const pings = [0, 0, 0];
    const entries = pings.map((_, i) => joinHeartbeats(100, { ping: () => pings[i]!++ }));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(pings).toEqual([10, 10, 10]);
    for (const entry of entries) entry.remove();
  });

  it('when a stream keeps writing, it gets no ping, while an idle one beside it does', () => {
    let busyPings = 0;
    let idlePings = 0;
    const busy = joinHeartbeats(100, { ping: () => busyPings++ });
    const idle = joinHeartbeats(100, { ping: () => idlePings++ });
    for (let i = 0; i < 20; i++) {
      vi.advanceTimersByTime(50);
      busy.wrote();
    }
    expect(busyPings).toBe(0);
    expect(idlePings).toBe(10);
    busy.remove();
    idle.remove();
  });

  it('when the last stream of an interval ends, its timer stops; streams of another interval keep theirs', () => {
    const a = joinHeartbeats(100, { ping: () => {} });
    const b = joinHeartbeats(100, { ping: () => {} });
    const other = joinHeartbeats(300, { ping: () => {} });
    expect(vi.getTimerCount()).toBe(2);
    a.remove();
    expect(vi.getTimerCount()).toBe(2);
    b.remove();
    expect(vi.getTimerCount()).toBe(1);
    other.remove();
    expect(vi.getTimerCount()).toBe(0);
    let pings = 0;
    const again = joinHeartbeats(100, { ping: () => pings++ });
    vi.advanceTimersByTime(100);
    expect(pings).toBe(1);
    again.remove();
  });
});
