/**
 * The executor's heartbeat period as it really went: one timer per executor sends the in-progress acks of
 * every task in flight (task-consumer.ts), and each tick tells this clock. A tick later than `stallMs` after
 * the one before means the process stood still (SIGSTOP, a long GC or event-loop stall) long enough for
 * nats-server to have handed its tasks to another executor. Attempts read {@link stalls} before each model
 * or tool call, and check that they still own their task when it changed (`ownershipCheck` in attempt/task-loop.ts).
 */
export class HeartbeatClock {
  #lastBeat: number;
  #stalls = 0;

  constructor(
    /** A gap between two ticks of at least this long counts as a stall. */
    private readonly stallMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.#lastBeat = now();
  }

  /** Called on every tick of the heartbeat timer. */
  beat(): void {
    const at = this.now();
    if (at - this.#lastBeat >= this.stallMs) this.#stalls++;
    this.#lastBeat = at;
  }

  /**
   * Stalls seen so far, counting one under way: a woken process may run other callbacks before its timer's
   * late tick, so a gap since the last tick counts at once (and is the same stall once the tick comes).
   */
  stalls(): number {
    return this.#stalls + (this.now() - this.#lastBeat >= this.stallMs ? 1 : 0);
  }
}
