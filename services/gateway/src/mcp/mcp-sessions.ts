/**
 * The gateway's open MCP sessions (`Mcp-Session-Id`), bounded: at most `maxSessions` per instance and
 * `maxSessionsPerCaller` per caller (an API key by its digest; an admin or trusted caller by its
 * account), each held in memory with its transport and server. A session belongs to the caller that
 * opened it: another caller naming its id is told it does not exist. When a cap is reached, the least
 * recently used session with no request in flight is closed to make room (the caller's own first, for
 * its own cap); when every one is busy, the new session is refused with 429 RATE_LIMITED. A session
 * idle (no request in flight) for `idleMs` is closed; its client's next request gets 404 and, as MCP
 * says, starts a new session.
 */
import { RateLimited } from '../errors.js';

export interface McpSessionLimits {
  maxSessions: number;
  maxSessionsPerCaller: number;
  idleMs: number;
}

export interface ClosableSession {
  close(): Promise<void>;
}

/** What is told to a caller refused a session: busy sessions end with their calls. */
export const MCP_SESSION_RETRY_AFTER_SECONDS = 5;

interface Entry<S> {
  session: S;
  owner: string;
  inFlight: number;
  lastUsed: number;
}

export interface SessionReservation<S> {
  /** The session got its id: it joins the table. */
  commit(id: string, session: S): void;
  /** No session came of it (the initialize request failed). Later calls do nothing. */
  cancel(): void;
}

export interface SessionUse<S> {
  session: S;
  /** The request is over; later calls do nothing. */
  release(): void;
}

export class McpSessionTable<S extends ClosableSession> {
  /** In order of last use, oldest first (an entry is moved to the end when used). */
  private readonly entries = new Map<string, Entry<S>>();
  private readonly pendingByOwner = new Map<string, number>();
  private pending = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly limits: McpSessionLimits,
    private readonly onClosed: (id: string, reason: 'idle' | 'evicted' | 'stopped') => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.max(1_000, Math.floor(limits.idleMs / 4)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Room for one more session of `owner`, making it by closing an idle one if need be; or the 429. */
  reserve(owner: string): SessionReservation<S> | RateLimited {
    const ownerCount = (): number => this.countOf(owner) + (this.pendingByOwner.get(owner) ?? 0);
    if (ownerCount() >= this.limits.maxSessionsPerCaller && !this.evictOne(owner)) {
      return new RateLimited(
        `this caller already has ${this.limits.maxSessionsPerCaller} MCP sessions in use, the most it may; end one (DELETE /mcp) or retry later`,
        MCP_SESSION_RETRY_AFTER_SECONDS,
        { scope: 'caller', limit: this.limits.maxSessionsPerCaller },
      );
    }
    if (this.entries.size + this.pending >= this.limits.maxSessions && !this.evictOne(undefined)) {
      return new RateLimited(
        'this gateway has as many MCP sessions in use as it keeps; retry later',
        MCP_SESSION_RETRY_AFTER_SECONDS,
        { scope: 'gateway', limit: this.limits.maxSessions },
      );
    }
    this.pending++;
    this.pendingByOwner.set(owner, (this.pendingByOwner.get(owner) ?? 0) + 1);
    let settled = false;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      this.pending--;
      const left = (this.pendingByOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.pendingByOwner.set(owner, left);
      else this.pendingByOwner.delete(owner);
    };
    return {
      commit: (id, session) => {
        if (settled) return;
        settle();
        this.entries.set(id, { session, owner, inFlight: 0, lastUsed: this.now() });
      },
      cancel: settle,
    };
  }

  /** The session `id` for a request of `owner`, held in use until released; undefined when it has none by that id. */
  use(id: string, owner: string): SessionUse<S> | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined || entry.owner !== owner) return undefined;
    entry.inFlight++;
    entry.lastUsed = this.now();
    this.entries.delete(id);
    this.entries.set(id, entry);
    let released = false;
    return {
      session: entry.session,
      release: () => {
        if (released) return;
        released = true;
        entry.inFlight--;
        entry.lastUsed = this.now();
      },
    };
  }

  /** Forgets a session that closed by itself (DELETE, or its transport closed). */
  remove(id: string): void {
    this.entries.delete(id);
  }

  /** Closes every idle session (no request in flight for `idleMs`). */
  closeIdle(): void {
    const cutoff = this.now() - this.limits.idleMs;
    for (const [id, entry] of this.entries) {
      if (entry.inFlight === 0 && entry.lastUsed <= cutoff) this.close(id, entry, 'idle');
    }
  }

  /** Closes every session (the gateway stops). */
  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    const closing = [...this.entries].map(([id, entry]) => this.close(id, entry, 'stopped'));
    await Promise.all(closing);
  }

  private countOf(owner: string): number {
    let count = 0;
    for (const entry of this.entries.values()) if (entry.owner === owner) count++;
    return count;
  }

  /** Closes the least recently used idle session (of `owner`, when given); false when every one is busy. */
  private evictOne(owner: string | undefined): boolean {
    for (const [id, entry] of this.entries) {
      if (entry.inFlight === 0 && (owner === undefined || entry.owner === owner)) {
        void this.close(id, entry, 'evicted');
        return true;
      }
    }
    return false;
  }

  private async close(id: string, entry: Entry<S>, reason: 'idle' | 'evicted' | 'stopped'): Promise<void> {
    if (this.entries.get(id) !== entry) return;
    this.entries.delete(id);
    this.onClosed(id, reason);
    await entry.session.close().catch(() => undefined);
  }
}
