/**
 * One timer for the `: ping` heartbeats of every open SSE stream with the same interval, instead of a
 * timer per stream re-armed on every frame: thousands of open streams cost one interval and a set, and a
 * frame costs a field write. The timer ticks every quarter interval and pings a stream that wrote nothing
 * for three full ticks, so an idle stream gets a ping between ¾ and one interval after its last write (a
 * busy one none). The timer is unref'd and stops with the last stream, so an idle gateway has no timer.
 */

/** Ticks per heartbeat interval: a stream idle this many ticks minus one is pinged. */
const TICKS_PER_INTERVAL = 4;

export interface HeartbeatTarget {
  /** Writes the ping (the stream checks that it is still open). */
  ping(): void;
}

/** A stream's place on its interval's timer. */
export interface HeartbeatEntry {
  /** Call after each frame written: the stream is not idle. */
  wrote(): void;
  /** Call once the stream ends. */
  remove(): void;
}

class HeartbeatTimer {
  private readonly entries = new Map<HeartbeatTarget, { lastTick: number }>();
  private tick = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly onEmpty: () => void,
  ) {}

  add(target: HeartbeatTarget): HeartbeatEntry {
    const state = { lastTick: this.tick };
    this.entries.set(target, state);
    this.timer ??= setInterval(
      () => this.beat(),
      Math.max(1, Math.floor(this.intervalMs / TICKS_PER_INTERVAL)),
    ).unref();
    return {
      wrote: () => {
        state.lastTick = this.tick;
      },
      remove: () => {
        if (!this.entries.delete(target) || this.entries.size > 0) return;
        clearInterval(this.timer);
        this.timer = undefined;
        this.onEmpty();
      },
    };
  }

  private beat(): void {
    const tick = ++this.tick;
    for (const [target, state] of this.entries) {
      if (tick - state.lastTick < TICKS_PER_INTERVAL) continue;
      state.lastTick = tick;
      target.ping();
    }
  }
}

const timers = new Map<number, HeartbeatTimer>();

/** Puts `target` on the shared timer of `intervalMs`; its pings come after that long without a write. */
export function joinHeartbeats(intervalMs: number, target: HeartbeatTarget): HeartbeatEntry {
  let timer = timers.get(intervalMs);
  if (timer === undefined) {
    const created = new HeartbeatTimer(intervalMs, () => {
      if (timers.get(intervalMs) === created) timers.delete(intervalMs);
    });
    timers.set(intervalMs, created);
    timer = created;
  }
  return timer.add(target);
}
