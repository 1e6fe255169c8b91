/**
 * One task's recent events as the gateway's live feed holds them: SSE frames ready to write, contiguous
 * by `seq`, with what the buffer can vouch for. `from` is the smallest seq from which every stored event
 * of the task is held here or will still be appended by the feed; a follower whose next seq is at least
 * `from` is served from memory, anyone else reads the stream. Followers wait on the buffer for its next
 * change; nothing is queued per follower.
 */

export interface BufferedEvent {
  readonly seq: number;
  readonly terminal: boolean;
  /** The event as one SSE frame (`id:`, `event:`, `data:`), formatted once for every follower. */
  readonly frame: string;
}

/** Trimmed events leave a hole at the front of the array; it is compacted once the hole is this big. */
const COMPACT_AFTER = 64;

/**
 * The waits pending on each signal, ended by one abort listener per signal: a follower waits once per
 * event on the same signal, and an EventTarget listener added and removed per wait was the largest
 * allocation per delivered event after the write itself.
 */
const pendingWaits = new WeakMap<AbortSignal, Set<() => void>>();

function waitsOn(signal: AbortSignal): Set<() => void> {
  let waits = pendingWaits.get(signal);
  if (waits === undefined) {
    const created = new Set<() => void>();
    signal.addEventListener(
      'abort',
      () => {
        for (const done of [...created]) done();
      },
      { once: true },
    );
    pendingWaits.set(signal, created);
    waits = created;
  }
  return waits;
}

export class TaskEventBuffer {
  private events: BufferedEvent[] = [];
  /** Index in `events` of the oldest event held. */
  private head = 0;
  private wakers = new Set<() => void>();
  private fromSeq: number | undefined;
  private lastSeq = 0;
  private heldBytes = 0;
  private ended = false;
  private isDropped = false;
  /** Followers watching this buffer (live or reading the stream until it covers them). */
  followers = 0;
  /** The lookup deciding `from` for a buffer a follower created, shared by its followers. */
  probe: Promise<void> | undefined;
  /** When the task's terminal event came in (ms since epoch); undefined while it runs. */
  finishedAt: number | undefined;

  constructor(readonly subject: string) {}

  /** See the module comment; undefined until the first event or the probe says. */
  get from(): number | undefined {
    return this.fromSeq;
  }

  /** Seq of the newest event taken in (or known to be stored); 0 when none. */
  get last(): number {
    return this.lastSeq;
  }

  get bytes(): number {
    return this.heldBytes;
  }

  get held(): number {
    return this.events.length - this.head;
  }

  /** The task's terminal event was taken in (or is the last stored): nothing follows. */
  get finished(): boolean {
    return this.ended;
  }

  /** Evicted, or the feed stopped: the buffer gets nothing more, and its followers must read the stream. */
  get dropped(): boolean {
    return this.isDropped;
  }

  /** True when a follower that has every event up to `cursor` can get all the rest from here. */
  covers(cursor: number): boolean {
    return !this.isDropped && this.fromSeq !== undefined && this.fromSeq <= cursor + 1;
  }

  /** The event with seq `cursor + 1`, when held. */
  eventAfter(cursor: number): BufferedEvent | undefined {
    if (this.fromSeq === undefined || cursor < this.fromSeq - 1 || cursor >= this.lastSeq) return undefined;
    return this.events[this.head + cursor + 1 - this.fromSeq];
  }

  /**
   * Takes in the next stored event. Returns the bytes held now minus before. An event at or before
   * `last` is one the buffer already vouches for (ignored); one beyond `last + 1` means the feed missed
   * events, so the buffer starts over at it.
   */
  append(event: BufferedEvent): number {
    if (this.isDropped || this.ended) return 0;
    const before = this.heldBytes;
    if (this.fromSeq !== undefined) {
      if (event.seq <= this.lastSeq) return 0;
      if (event.seq !== this.lastSeq + 1) this.clear(event.seq);
    } else {
      this.fromSeq = event.seq;
    }
    this.events.push(event);
    this.lastSeq = event.seq;
    this.heldBytes += event.frame.length;
    if (event.terminal) this.ended = true;
    return this.heldBytes - before;
  }

  /**
   * What the stream held when this buffer had no event yet: its last seq (0: none) and whether that
   * event was terminal. Every later event reaches the buffer, so it vouches from the next seq on.
   */
  startAfter(lastStoredSeq: number, terminal: boolean): void {
    if (this.isDropped || this.fromSeq !== undefined) return;
    this.fromSeq = lastStoredSeq + 1;
    this.lastSeq = lastStoredSeq;
    this.ended = terminal;
  }

  /** Drops the oldest event held; returns its bytes (0 when none). */
  dropOldest(): number {
    const oldest = this.events[this.head];
    if (oldest === undefined || this.fromSeq === undefined) return 0;
    this.events[this.head] = undefined as unknown as BufferedEvent;
    this.head++;
    this.fromSeq++;
    this.heldBytes -= oldest.frame.length;
    if (this.head >= COMPACT_AFTER && this.head * 2 >= this.events.length) {
      this.events = this.events.slice(this.head);
      this.head = 0;
    }
    return oldest.frame.length;
  }

  /** Evicts the buffer: frees its events and sends its followers to the stream. Returns the bytes freed. */
  drop(): number {
    const freed = this.heldBytes;
    this.isDropped = true;
    this.events = [];
    this.head = 0;
    this.heldBytes = 0;
    this.wake();
    return freed;
  }

  /** Resolves at the buffer's next change (an event, a trim, eviction) or when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted || this.isDropped) return resolve();
      const done = (): void => {
        aborting.delete(done);
        this.wakers.delete(done);
        resolve();
      };
      this.wakers.add(done);
      const aborting = waitsOn(signal);
      aborting.add(done);
    });
  }

  /** Tells every waiting follower to look again. */
  wake(): void {
    if (this.wakers.size === 0) return;
    const wakers = this.wakers;
    this.wakers = new Set();
    for (const waker of wakers) waker();
  }

  private clear(nextSeq: number): void {
    this.events = [];
    this.head = 0;
    this.heldBytes = 0;
    this.fromSeq = nextSeq;
    this.lastSeq = nextSeq - 1;
  }
}
