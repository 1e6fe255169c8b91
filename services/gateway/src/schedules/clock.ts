/**
 * The scheduler's sense of time, injected so tests can freeze it and move it on without sleeping: the
 * current time and a one-shot timer. `systemClock` is the real one.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface SchedulerClock {
  now(): Date;
  /** Calls `fire` once after `ms` of this clock's time. */
  setTimer(ms: number, fire: () => void): TimerHandle;
}

export const systemClock: SchedulerClock = {
  now: () => new Date(),
  setTimer(ms, fire) {
    const timer = setTimeout(fire, ms);
    // A pending tick must not keep a stopping process alive.
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};
