/** A counting semaphore: at most `limit` holders at once; `idle()` resolves when none is left. */
export class ConcurrencyLimit {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`limit must be a positive integer, got ${limit}`);
  }

  /** Resolves when a slot is free; the caller must `release()` it exactly once. */
  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    // The slot passes straight to the next waiter, so `active` stays the same.
    if (next) return next();
    this.active--;
    if (this.active === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  async idle(): Promise<void> {
    if (this.active === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }
}
