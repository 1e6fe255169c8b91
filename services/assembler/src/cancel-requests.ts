/**
 * The cancel requests this assembler has heard, so a task cancelled before assembly ends CANCELLED without
 * a read of its status record. The gateway sets `cancel_requested_at` in the record and then broadcasts a
 * CancelSignal on `mesh.control.cancel.<account>.<trace_id>` (core NATS); this instance listens to every
 * such subject and remembers the most recent requests (bounded).
 *
 * A broadcast is heard only while the subscription is up, so a task stored on the bus before this instance
 * was (last) listening — queued while it was down, or across a reconnect — may have been cancelled
 * unheard: for it the answer is `unknown` and the caller reads the status record as before. The executors
 * check the record before they run a task too, so a request this instance misses still ends the task
 * CANCELLED before any model or tool call.
 */
import { decodeCancelSignal } from '@agentmesh/bus';
import { taskKey, Wildcards } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';

export type CancelCheck =
  | { readonly state: 'requested'; readonly requestedAt: string }
  /** Listening since before the task was stored, and no request heard. */
  | { readonly state: 'none' }
  /** The task may have been cancelled while this instance was not listening: read the status. */
  | { readonly state: 'unknown' };

/** What the received-task consumer asks: has the task been cancelled? */
export interface CancelRequestLookup {
  check(accountId: string, traceId: string, storedAtMs: number): CancelCheck;
}

export interface CancelRequestsOptions {
  /** Requests remembered at most (oldest forgotten first); 0: do not listen, every check is `unknown`. */
  maxEntries: number;
  /**
   * How long after listening (re)started a task must have been stored for the broadcasts heard to count as
   * complete: the clock skew tolerated between the NATS server (which stamps the task) and this host.
   */
  clockSkewMs: number;
  log: Logger;
  now?: () => number;
}

export class CancelRequests implements CancelRequestLookup {
  private readonly heard = new Map<string, string>();
  /** Since when (this host's clock) the subscription has been up without a break; undefined: not up. */
  private listeningSince: number | undefined;
  private subscription: Subscription | undefined;
  private statusFeed: AsyncIterable<{ type: string }> | undefined;
  private stopped = false;
  private readonly now: () => number;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly options: CancelRequestsOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  static async start(nc: NatsConnection, options: CancelRequestsOptions): Promise<CancelRequests> {
    const requests = new CancelRequests(nc, options);
    if (options.maxEntries > 0) await requests.listen();
    return requests;
  }

  check(accountId: string, traceId: string, storedAtMs: number): CancelCheck {
    const requestedAt = this.heard.get(taskKey(accountId, traceId));
    if (requestedAt !== undefined) return { state: 'requested', requestedAt };
    const since = this.listeningSince;
    return since !== undefined && storedAtMs >= since + this.options.clockSkewMs ? NONE : UNKNOWN;
  }

  stop(): void {
    this.stopped = true;
    this.listeningSince = undefined;
    this.subscription?.unsubscribe();
    (this.statusFeed as { stop?: () => void } | undefined)?.stop?.();
  }

  private async listen(): Promise<void> {
    const { log } = this.options;
    this.subscription = this.nc.subscribe(Wildcards.ALL_CANCELS, {
      callback: (error, msg) => {
        if (error) {
          // The subscription is gone (e.g. refused): from now on every task's status is read.
          this.listeningSince = undefined;
          log.warn({ err: error }, 'cancel subscription failed; task status is read instead');
          return;
        }
        const signal = decodeCancelSignal(msg.subject, msg.data);
        if (signal === undefined) {
          log.warn({ subject: msg.subject }, 'ignored a malformed cancel signal');
          return;
        }
        this.remember(taskKey(signal.account_id, signal.trace_id), signal.requested_at);
      },
    });
    void this.subscription.closed.then(() => {
      this.listeningSince = undefined;
    });
    this.statusFeed = this.nc.status();
    void (async () => {
      for await (const status of this.statusFeed!) {
        if (this.stopped) return;
        if (status.type === 'disconnect') this.listeningSince = undefined;
        else if (status.type === 'reconnect') await this.confirmListening();
      }
    })().catch(() => {
      // The connection closed: nothing more to follow.
    });
    await this.confirmListening();
  }

  /** Listening counts from when the server has surely seen the subscription: after a round trip. */
  private async confirmListening(): Promise<void> {
    try {
      await this.nc.flush();
    } catch {
      return;
    }
    if (!this.stopped && this.subscription !== undefined && !this.subscription.isClosed()) {
      this.listeningSince = this.now();
    }
  }

  private remember(key: string, requestedAt: string): void {
    this.heard.delete(key);
    this.heard.set(key, requestedAt);
    if (this.heard.size > this.options.maxEntries) this.heard.delete(this.heard.keys().next().value!);
  }
}

const NONE: CancelCheck = Object.freeze({ state: 'none' });
const UNKNOWN: CancelCheck = Object.freeze({ state: 'unknown' });
