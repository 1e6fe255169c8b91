/**
 * How many task event streams (SSE) may be open at once, per caller and per gateway instance. Each open
 * stream holds a connection and a follower of the live feed, and while it reads the stream instead (a
 * late or resuming client, or SSE_LIVE_FEED off) a JetStream consumer on MESH_EVENTS: without a cap one
 * API key could make NATS hold thousands of them. A stream takes a slot before it reads anything and
 * gives it back when it ends, whatever ends it (the terminal event, the client going away, the gateway
 * stopping).
 */
import { CallerKind, type Caller } from './auth.js';
import { RateLimited } from './errors.js';

/** What a refused client is told to wait: streams end as tasks finish, typically within seconds. */
export const EVENT_STREAM_RETRY_AFTER_SECONDS = 5;

export interface EventStreamLimits {
  /** Streams one gateway instance keeps open at once. */
  maxStreams: number;
  /** Streams one caller keeps open at once on one instance. */
  maxStreamsPerCaller: number;
}

export interface EventStreamSlot {
  /** Gives the slot back; later calls do nothing. */
  release(): void;
}

export class EventStreamSlots {
  private total = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(private readonly limits: EventStreamLimits) {}

  /** Streams open now. */
  get open(): number {
    return this.total;
  }

  /** A slot for one more stream of `caller` (see {@link eventStreamCaller}), or the 429 saying which cap is reached. */
  take(caller: string): EventStreamSlot | RateLimited {
    const callerStreams = this.byCaller.get(caller) ?? 0;
    if (callerStreams >= this.limits.maxStreamsPerCaller) {
      return new RateLimited(
        `this caller already has ${this.limits.maxStreamsPerCaller} event streams open, the most it may; close one or retry later`,
        EVENT_STREAM_RETRY_AFTER_SECONDS,
        { scope: 'caller', limit: this.limits.maxStreamsPerCaller },
      );
    }
    if (this.total >= this.limits.maxStreams) {
      return new RateLimited(
        'this gateway has as many event streams open as it serves; retry later',
        EVENT_STREAM_RETRY_AFTER_SECONDS,
        { scope: 'gateway', limit: this.limits.maxStreams },
      );
    }
    this.total++;
    this.byCaller.set(caller, callerStreams + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total--;
        const left = (this.byCaller.get(caller) ?? 1) - 1;
        if (left > 0) this.byCaller.set(caller, left);
        else this.byCaller.delete(caller);
      },
    };
  }
}

/**
 * Whom a stream counts against: an API key caller by its key (a digest: the key itself is never kept),
 * an admin or trusted caller by the account it acts for, since those callers share one key or none.
 */
export function eventStreamCaller(caller: Caller, accountId: string): string {
  if (caller.kind !== CallerKind.API_KEY || caller.keyDigest === undefined) return `account:${accountId}`;
  return `key:${caller.keyDigest}`;
}
