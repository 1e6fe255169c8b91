/**
 * When a failed webhook delivery is tried again: the configured delay before retry n, with ±20% jitter so
 * deliveries that failed together (an endpoint that was down) do not come back together.
 */
export class RetrySchedule {
  constructor(
    /** Delay before retry 1, 2, …; attempts = delays + 1. */
    readonly delaysMs: readonly number[],
    private readonly random: () => number = Math.random,
  ) {}

  /** How many attempts a delivery gets in all. */
  get maxAttempts(): number {
    return this.delaysMs.length + 1;
  }

  /** The delay after failed attempt `attempt` (1-based); undefined when it was the last. */
  delayAfter(attempt: number): number | undefined {
    const base = this.delaysMs[attempt - 1];
    if (base === undefined) return undefined;
    return Math.round(base * (0.8 + 0.4 * this.random()));
  }
}
