/**
 * Which running executors provide which native tools: KV `mesh_native_providers`, one key per (class name,
 * executor instance), `<class_name>.<instance>`, in a bucket whose entries expire after a TTL. Each
 * executor announces its classes, with the definitions of their tools, at start, re-announces them well
 * within the TTL, and deletes them when it stops; a crashed executor's announcements expire on their own.
 *
 * This is the only registry-like bucket an executor writes: the assembler mirrors the announced
 * definitions into the shared catalogue of `mesh_tools` (executors may not write the registry), and
 * this bucket says whether anybody can run a native tool right now. `nativeToolProviders` is what a
 * reader asks.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  NATIVE_CLASS_NAME_PATTERN as CLASS_NAME_TOKEN,
  type NativeProviderAnnouncement,
  type NativeTool,
} from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';

const INSTANCE_TOKEN = /^[A-Za-z0-9_-]{1,96}$/;
/** Announcements are renewed this many times per TTL, so one missed renewal does not expire them. */
const RENEWALS_PER_TTL = 3;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The ids of the executors announcing `className` now; empty when none does (or the name is not a class). */
export async function nativeToolProviders(providers: KV, className: string): Promise<string[]> {
  if (!CLASS_NAME_TOKEN.test(className)) return [];
  const ids: string[] = [];
  for await (const key of await providers.keys(`${className}.*`)) {
    const entry = await providers.get(key);
    if (entry?.operation !== 'PUT') continue;
    try {
      const announcement = JSON.parse(decoder.decode(entry.value)) as Partial<NativeProviderAnnouncement>;
      ids.push(typeof announcement.executor_id === 'string' ? announcement.executor_id : key);
    } catch {
      ids.push(key);
    }
  }
  return ids.sort();
}

export interface NativeProviderAnnouncerOptions {
  readonly executorId: string;
  /** The native tools this executor runs; announced per class. */
  readonly tools: readonly NativeTool[];
  /** This executor's idea of the TTL; the bucket's own TTL wins when it is shorter. */
  readonly ttlMs: number;
  /** Hears about renewals that failed (the next one tries again). */
  readonly onError: (error: unknown) => void;
}

/** One executor's announcements: started once, renewed on a timer, withdrawn at stop. */
export class NativeProviderAnnouncer {
  readonly #kv: KV;
  readonly #options: NativeProviderAnnouncerOptions;
  readonly #instance: string;
  #timer: NodeJS.Timeout | undefined;
  #renewal: Promise<void> = Promise.resolve();

  readonly #byClass: ReadonlyMap<string, readonly NativeTool[]>;

  private constructor(kv: KV, options: NativeProviderAnnouncerOptions) {
    const byClass = new Map<string, NativeTool[]>();
    for (const tool of options.tools) {
      if (!CLASS_NAME_TOKEN.test(tool.class_name)) {
        throw new TypeError(`"${tool.class_name}" is not a class name token`);
      }
      byClass.set(tool.class_name, [...(byClass.get(tool.class_name) ?? []), tool]);
    }
    this.#kv = kv;
    this.#options = options;
    this.#byClass = byClass;
    // Executor ids need not be unique (executor-<pid> in two containers): the random part keeps the
    // keys of two instances apart, so one stopping never withdraws the other's announcements.
    this.#instance = `${instanceToken(options.executorId)}_${randomBytes(4).toString('hex')}`;
  }

  /** Announces the classes and keeps renewing them, RENEWALS_PER_TTL times per TTL. */
  static async start(kv: KV, options: NativeProviderAnnouncerOptions): Promise<NativeProviderAnnouncer> {
    const announcer = new NativeProviderAnnouncer(kv, options);
    await announcer.#announce();
    const bucketTtlMs = (await kv.status()).ttl;
    const ttlMs = bucketTtlMs > 0 ? Math.min(bucketTtlMs, options.ttlMs) : options.ttlMs;
    const renew = () => {
      announcer.#renewal = announcer.#announce().catch(options.onError);
    };
    announcer.#timer = setInterval(renew, Math.max(1, Math.floor(ttlMs / RENEWALS_PER_TTL)));
    announcer.#timer.unref();
    return announcer;
  }

  /** The keys this instance writes. */
  get keys(): string[] {
    return [...this.#byClass.keys()].map((className) => `${className}.${this.#instance}`);
  }

  /** Stops renewing and withdraws the announcements. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    // A renewal still under way would otherwise put back what is deleted here.
    await this.#renewal;
    await Promise.all(this.keys.map((key) => this.#kv.delete(key)));
  }

  async #announce(): Promise<void> {
    const announcedAt = new Date().toISOString();
    await Promise.all(
      [...this.#byClass].map(([className, tools]) => {
        const announcement: NativeProviderAnnouncement = {
          class_name: className,
          executor_id: this.#options.executorId,
          announced_at: announcedAt,
          tools: [...tools],
        };
        return this.#kv.put(`${className}.${this.#instance}`, encoder.encode(JSON.stringify(announcement)));
      }),
    );
  }
}

function instanceToken(executorId: string): string {
  if (INSTANCE_TOKEN.test(executorId)) return executorId;
  return `x${createHash('sha256').update(executorId, 'utf8').digest('hex').slice(0, 24)}`;
}
