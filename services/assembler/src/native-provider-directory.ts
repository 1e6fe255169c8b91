/**
 * Which native tool classes some running executor provides now, as the assembler hears it from KV
 * `mesh_native_providers` (`<class_name>.<instance>`): a task whose tools need a class nobody provides is
 * ended at assembly with a clear error instead of being published where no executor reads it. An
 * announcement counts until it is deleted (an executor stopping) or until the bucket's TTL has passed
 * since it was written: expiry removes entries without telling a watch, and a live executor renews its
 * announcements well within the TTL.
 */
import type { KvEntry } from '@nats-io/kv';

export class NativeProviderDirectory {
  /** Key → its class and when it was last written (server time). */
  readonly #announcements = new Map<string, { className: string; writtenAtMs: number }>();

  /** `ttlMs` 0: announcements never expire. */
  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one entry of the bucket's watch. */
  heard(entry: Pick<KvEntry, 'key' | 'operation' | 'created'>): void {
    if (entry.operation !== 'PUT') {
      this.#announcements.delete(entry.key);
      return;
    }
    const className = entry.key.slice(0, entry.key.indexOf('.'));
    if (className === '') return;
    this.#announcements.set(entry.key, { className, writtenAtMs: entry.created.getTime() });
  }

  /** Whether some executor's announcement of `className` is current. */
  isProvided(className: string): boolean {
    const now = this.now();
    for (const { className: provided, writtenAtMs } of this.#announcements.values()) {
      if (provided === className && (this.ttlMs === 0 || now - writtenAtMs < this.ttlMs)) return true;
    }
    return false;
  }

  /** Those of `classNames` no running executor provides. */
  unprovided(classNames: readonly string[]): string[] {
    return classNames.filter((name) => !this.isProvided(name));
  }
}
