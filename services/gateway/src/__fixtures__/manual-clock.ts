/**
 * A clock for tests: frozen until `set`/`advance` moves it, when every timer that came due fires (in due
 * order). What a timer starts is the code under test's business; tests await the scheduler's own
 * `settled()` to know its tick is done, never a sleep.
 */
import type { SchedulerClock, TimerHandle } from '../schedules/clock.js';

interface PendingTimer {
  due: number;
  fire: () => void;
  cancelled: boolean;
}

export class ManualClock implements SchedulerClock {
  private current: number;
  private timers: PendingTimer[] = [];

  constructor(start: Date | string) {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  setTimer(ms: number, fire: () => void): TimerHandle {
    const timer: PendingTimer = { due: this.current + Math.max(0, ms), fire, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  advance(ms: number): void {
    this.set(new Date(this.current + ms));
  }

  /** Moves the clock to `to` and fires the timers due by then (those they set now fire only when due). */
  set(to: Date | string): void {
    this.current = new Date(to).getTime();
    const due = this.timers
      .filter((t) => !t.cancelled && t.due <= this.current)
      .sort((a, b) => a.due - b.due);
    this.timers = this.timers.filter((t) => !t.cancelled && t.due > this.current);
    for (const timer of due) timer.fire();
  }
}
