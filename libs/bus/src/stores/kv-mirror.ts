/**
 * A bounded in-memory copy of a KV bucket, kept live by a watch, so a hot path reads its entries without a
 * round trip to NATS. It answers a key with what it holds (`present` / `absent`) or says it does not know
 * (`unknown`): then the caller reads the bucket ({@link KvMirror.read}), and what it read is kept too.
 *
 * What it knows:
 * - while the watch is live and the mirror has never dropped an entry for room, it holds the whole bucket,
 *   so a key it lacks is absent (up to the watch's lag: a value stored a moment ago may not have arrived;
 *   callers that would fail on `absent` read once more, see the registry's {@link LiveDefinitions});
 * - once it is full it drops the least recently used entries and answers `unknown` for keys it lacks;
 * - while the watch is down — not started yet, failed, the connection lost — it answers `unknown` for
 *   every key and keeps nothing it reads, so it never serves what it can no longer keep current. A failed
 *   watch is started again after a growing delay; after a reconnect the watch is started afresh (updates
 *   sent while the connection was down may never reach the old one).
 *
 * Values are decoded on first use and the decoded value is kept (with a decoding error, if any). Nothing
 * here logs: `onEvent` hears the mirror's state changes, never a value.
 */
import type { KV, KvEntry, KvWatchEntry } from '@nats-io/kv';

export type MirrorLookup<T> =
  | { readonly state: 'present'; readonly value: T }
  | { readonly state: 'absent' }
  | { readonly state: 'unknown' };

export type MirrorEvent =
  | { readonly type: 'live'; readonly entries: number; readonly complete: boolean }
  | {
      readonly type: 'stale';
      readonly reason: 'disconnected' | 'reconnected' | 'watch_failed';
      readonly error?: unknown;
    }
  /** An entry did not decode; lookups of it throw `error` until it is written again. */
  | { readonly type: 'invalid'; readonly key: string; readonly error: unknown };

/** Where a value came from: the mirror's memory, or a read of the bucket. */
export type LookupSource = 'memory' | 'kv';

/** The part of a NATS connection the mirror follows: its disconnects and reconnects. */
export interface ConnectionEvents {
  status(): AsyncIterable<{ type: string }>;
}

export interface KvMirrorOptions<T> {
  kv: KV;
  /** Turns a stored value into what lookups return; throwing marks the entry invalid. */
  decode(key: string, data: Uint8Array): T;
  /** Entries held at most (values and remembered deletions); 0 keeps nothing and never watches. */
  maxEntries: number;
  /** The connection the bucket is used through; without it, reconnects are left to the watch itself. */
  connection?: ConnectionEvents;
  onEvent?(event: MirrorEvent): void;
  /** Told of each value served from memory (`lookup` found it) and of each read of the bucket (`read`). */
  onLookup?(source: LookupSource): void;
  /** Delay before a failed watch is started again: from `min`, doubling up to `max`. */
  retryDelayMs?: { min: number; max: number };
  /**
   * The group a key belongs to (say, its account), counted so {@link KvMirror.anyInGroup} answers without a
   * walk over every key; undefined: the key is in no group.
   */
  groupOf?(key: string): string | undefined;
}

type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

interface Slot<T> {
  /** The bucket's revision of this state; 0 when a read found no entry at all. */
  readonly revision: number;
  /** undefined: the key is deleted (or was never there). */
  readonly data: Uint8Array | undefined;
  decoded?: Decoded<T>;
}

type Watch = Awaited<ReturnType<KV['watch']>>;

const DEFAULT_RETRY = { min: 500, max: 30_000 } as const;

export class KvMirror<T> {
  private slots = new Map<string, Slot<T>>();
  /** Keys holding a value, per group (`groupOf`); a group with none has no entry. */
  private groups = new Map<string, number>();
  /** The watch has delivered the bucket's content and the connection is up. */
  private live = false;
  /** Nothing was dropped for room since the watch started: a missing key is absent. */
  private complete = false;
  /** Bumped whenever a watch is replaced, so a superseded watch's entries and failures are ignored. */
  private generation = 0;
  private watch: Watch | undefined;
  /** Keys being read directly, and whether the watch changed them meanwhile (then the read is not kept). */
  private readonly reading = new Map<string, { touched: boolean }>();
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private statusFeed: AsyncIterable<{ type: string }> | undefined;
  /** Resolves the load {@link follow} waits for; called whenever that load is superseded or fails. */
  private settleLoad: (() => void) | undefined;

  private constructor(private readonly options: KvMirrorOptions<T>) {}

  /**
   * Starts the watch and resolves once the bucket's content is loaded, or once the first attempt failed
   * (the mirror then answers `unknown` and keeps trying in the background).
   */
  static async start<T>(options: KvMirrorOptions<T>): Promise<KvMirror<T>> {
    const mirror = new KvMirror(options);
    if (options.maxEntries > 0) {
      mirror.followConnection();
      await mirror.follow();
    }
    return mirror;
  }

  /** What the mirror holds for `key`; throws the decoding error of an invalid entry. */
  lookup(key: string): MirrorLookup<T> {
    if (!this.live) return UNKNOWN;
    const slot = this.slots.get(key);
    if (slot === undefined) return this.complete ? ABSENT : UNKNOWN;
    // Most recently used last: a Map iterates in insertion order, so the first key is the one to drop.
    this.slots.delete(key);
    this.slots.set(key, slot);
    if (slot.data === undefined) return ABSENT;
    const value = this.decoded(key, slot, slot.data);
    this.options.onLookup?.('memory');
    return { state: 'present', value };
  }

  /** The value from the mirror, else read from the bucket. */
  async get(key: string): Promise<T | undefined> {
    const known = this.lookup(key);
    if (known.state === 'present') return known.value;
    if (known.state === 'absent') return undefined;
    return this.read(key);
  }

  /** Reads `key` from the bucket (whatever the mirror holds) and keeps the result when it is current. */
  async read(key: string): Promise<T | undefined> {
    const generation = this.generation;
    const tracker = { touched: false };
    this.options.onLookup?.('kv');
    const keep = this.live && !this.reading.has(key);
    if (keep) this.reading.set(key, tracker);
    let entry: KvEntry | null;
    try {
      entry = await this.options.kv.get(key);
    } finally {
      if (keep) this.reading.delete(key);
    }
    const data = entry?.operation === 'PUT' ? entry.value : undefined;
    const slot: Slot<T> = { revision: entry?.revision ?? 0, data };
    // Kept only when nothing newer can exist: the same watch is still live and did not touch the key.
    if (keep && this.live && generation === this.generation && !tracker.touched) {
      const held = this.slots.get(key);
      // Holding everything, an absent key needs no entry of its own.
      const needless = held === undefined && data === undefined && this.complete;
      if (!needless && (held === undefined || held.revision < slot.revision)) this.hold(key, slot);
    }
    return data === undefined ? undefined : this.decoded(key, slot, data);
  }

  /**
   * The keys that hold a value, when the mirror holds the whole bucket (live, nothing dropped for room);
   * undefined when it cannot say (the caller reads the bucket instead).
   */
  keys(): string[] | undefined {
    if (!this.live || !this.complete) return undefined;
    const keys: string[] = [];
    for (const [key, slot] of this.slots) if (slot.data !== undefined) keys.push(key);
    return keys;
  }

  /**
   * Whether a key of `group` (`groupOf`) holds a value, when the mirror holds the whole bucket; undefined
   * when it cannot say. Counted as entries come and go, so asking costs no walk over the keys.
   */
  anyInGroup(group: string): boolean | undefined {
    if (!this.live || !this.complete) return undefined;
    return this.groups.has(group);
  }

  /** True while the mirror answers from memory. */
  isLive(): boolean {
    return this.live;
  }

  /** Entries held (values and remembered deletions). */
  size(): number {
    return this.slots.size;
  }

  stop(): void {
    this.stopped = true;
    this.supersede();
    clearTimeout(this.retryTimer);
    (this.statusFeed as { stop?: () => void } | undefined)?.stop?.();
  }

  /** Ends the current watch's say: nothing it delivers (or its failure) counts any more. */
  private supersede(): void {
    this.generation++;
    this.live = false;
    this.watch?.stop();
    this.watch = undefined;
    this.slots = new Map();
    this.groups = new Map();
    const settle = this.settleLoad;
    this.settleLoad = undefined;
    settle?.();
  }

  private decoded(key: string, slot: Slot<T>, data: Uint8Array): T {
    if (slot.decoded === undefined) {
      try {
        slot.decoded = { ok: true, value: this.options.decode(key, data) };
      } catch (error) {
        slot.decoded = { ok: false, error };
        this.options.onEvent?.({ type: 'invalid', key, error });
      }
    }
    if (!slot.decoded.ok) throw slot.decoded.error;
    return slot.decoded.value;
  }

  private hold(key: string, slot: Slot<T>): void {
    this.forget(key);
    this.slots.set(key, slot);
    this.count(key, slot, 1);
    if (this.slots.size > this.options.maxEntries) {
      this.forget(this.slots.keys().next().value!);
      this.complete = false;
    }
  }

  private forget(key: string): void {
    const held = this.slots.get(key);
    if (held === undefined) return;
    this.slots.delete(key);
    this.count(key, held, -1);
  }

  /** Counts a slot that holds a value in (1) or out of (-1) its key's group. */
  private count(key: string, slot: Slot<T>, change: 1 | -1): void {
    if (slot.data === undefined || this.options.groupOf === undefined) return;
    const group = this.options.groupOf(key);
    if (group === undefined) return;
    const held = (this.groups.get(group) ?? 0) + change;
    if (held > 0) this.groups.set(group, held);
    else this.groups.delete(group);
  }

  private apply(entry: KvWatchEntry): void {
    const key = entry.key;
    const read = this.reading.get(key);
    if (read !== undefined) read.touched = true;
    const held = this.slots.get(key);
    if (held !== undefined && held.revision > entry.revision) return;
    if (entry.operation === 'PUT') {
      this.hold(key, { revision: entry.revision, data: entry.value });
    } else if (this.complete) {
      // Holding everything, a key it lacks is absent already.
      this.forget(key);
    } else if (held !== undefined) {
      this.hold(key, { revision: entry.revision, data: undefined });
    }
  }

  /** Replaces the watch with a new one and loads the bucket's content into a fresh map. */
  private async follow(): Promise<void> {
    if (this.stopped) return;
    this.supersede();
    const generation = this.generation;
    clearTimeout(this.retryTimer);
    this.complete = true;
    let markLoaded!: () => void;
    const loaded = new Promise<void>((resolve) => (markLoaded = resolve));
    this.settleLoad = markLoaded;
    let watch: Watch;
    try {
      watch = await this.options.kv.watch();
    } catch (error) {
      this.failed(generation, error);
      return;
    }
    if (generation !== this.generation) {
      watch.stop();
      return;
    }
    this.watch = watch;
    const ready = (): void => {
      if (generation !== this.generation || this.live) return;
      this.live = true;
      this.failures = 0;
      this.settleLoad = undefined;
      this.options.onEvent?.({ type: 'live', entries: this.slots.size, complete: this.complete });
      markLoaded();
    };
    void (async () => {
      for await (const entry of watch) {
        if (generation !== this.generation) return;
        this.apply(entry);
        // The initial pass ends with the entry nothing is pending behind.
        if (entry.delta === 0) ready();
      }
    })().then(
      () => this.failed(generation, new Error('the KV watch ended')),
      (error: unknown) => this.failed(generation, error),
    );
    try {
      // An empty bucket sends no entry at all.
      if ((await this.options.kv.status()).values === 0) ready();
    } catch (error) {
      this.failed(generation, error);
    }
    await loaded;
  }

  private failed(generation: number, error: unknown): void {
    if (generation !== this.generation || this.stopped) return;
    this.supersede();
    this.options.onEvent?.({ type: 'stale', reason: 'watch_failed', error });
    const { min, max } = this.options.retryDelayMs ?? DEFAULT_RETRY;
    const delay = Math.min(max, min * 2 ** this.failures++);
    this.retryTimer = setTimeout(() => void this.follow(), delay);
    this.retryTimer.unref();
  }

  private followConnection(): void {
    const connection = this.options.connection;
    if (connection === undefined) return;
    this.statusFeed = connection.status();
    void (async () => {
      for await (const status of this.statusFeed!) {
        if (this.stopped) return;
        if (status.type === 'disconnect') {
          // Updates may be lost while the connection is down: answer nothing from memory.
          this.supersede();
          this.options.onEvent?.({ type: 'stale', reason: 'disconnected' });
        } else if (status.type === 'reconnect') {
          this.options.onEvent?.({ type: 'stale', reason: 'reconnected' });
          void this.follow();
        }
      }
    })().catch(() => {
      // The connection closed: nothing more to follow.
    });
  }
}

const UNKNOWN: MirrorLookup<never> = Object.freeze({ state: 'unknown' });
const ABSENT: MirrorLookup<never> = Object.freeze({ state: 'absent' });
