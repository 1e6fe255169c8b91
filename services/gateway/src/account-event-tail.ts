/**
 * One `GET /v1/events` stream's view of the live feed: every stored event of one account, as SSE
 * frames, in the order the feed takes them in. The feed cannot wait for a slow client, so what the
 * client has not read yet is held here up to `maxPendingBytes`; beyond that the tail ends with a
 * comment saying so (the client reconnects and goes on from the live edge) instead of holding an
 * unbounded backlog.
 */
import type { LiveEventFeed } from './live-event-feed.js';

/** Written as the stream's last frame when the client fell too far behind. */
export const TAIL_OVERFLOW_COMMENT = ': too slow: events were dropped, the stream ends; reconnect\n\n';

export interface AccountEventTailOptions {
  maxPendingBytes: number;
  /** Aborted when the client goes away or the gateway stops. */
  signal: AbortSignal;
}

export class AccountEventTail implements AsyncIterable<string> {
  private readonly pending: string[] = [];
  private pendingBytes = 0;
  private overflowed = false;
  private wake: (() => void) | undefined;
  private readonly unfollow: () => void;

  /** Follows the account at once: every event the feed takes in from here on is queued. */
  constructor(
    feed: Pick<LiveEventFeed, 'followAccount'>,
    accountId: string,
    private readonly options: AccountEventTailOptions,
  ) {
    this.unfollow = feed.followAccount(accountId, (frame) => this.push(frame));
    options.signal.addEventListener('abort', () => this.notify(), { once: true });
  }

  /** The client fell too far behind and the tail ended for it. */
  get fellBehind(): boolean {
    return this.overflowed;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    try {
      for (;;) {
        const frame = this.pending.shift();
        if (frame !== undefined) {
          this.pendingBytes -= Buffer.byteLength(frame);
          yield frame;
          continue;
        }
        if (this.overflowed) {
          yield TAIL_OVERFLOW_COMMENT;
          return;
        }
        if (this.options.signal.aborted) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.close();
    }
  }

  /** Stops following the account (also when the stream never started). */
  close(): void {
    this.unfollow();
  }

  private push(frame: string): void {
    if (this.overflowed) return;
    const bytes = Buffer.byteLength(frame);
    if (this.pendingBytes + bytes > this.options.maxPendingBytes) {
      // What is queued is dropped too: the client learns of the gap at once, not a backlog later.
      this.overflowed = true;
      this.pending.length = 0;
      this.pendingBytes = 0;
      this.unfollow();
    } else {
      this.pending.push(frame);
      this.pendingBytes += bytes;
    }
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
