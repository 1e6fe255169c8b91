/**
 * The list of requests a test server received, with a bounded wait for "n requests have arrived"
 * that is woken by each arrival instead of polling.
 */
import { WaitForTimeoutError } from '../wait-for.js';

export class RequestLog<T> {
  readonly entries: T[] = [];
  readonly #waiters = new Set<() => void>();

  add(entry: T): void {
    this.entries.push(entry);
    for (const wake of this.#waiters) wake();
  }

  /** Resolves with the entries once at least `count` have arrived. */
  waitForCount(count: number, timeoutMs = 5_000): Promise<T[]> {
    if (this.entries.length >= count) return Promise.resolve([...this.entries]);
    return new Promise((resolve, reject) => {
      const wake = (): void => {
        if (this.entries.length < count) return;
        finish();
        resolve([...this.entries]);
      };
      const timer = setTimeout(() => {
        finish();
        reject(new WaitForTimeoutError(`${count} requests (received ${this.entries.length})`, timeoutMs));
      }, timeoutMs);
      const finish = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
      };
      this.#waiters.add(wake);
    });
  }
}
