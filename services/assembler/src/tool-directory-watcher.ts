/**
 * Notices changes in a tool directory and re-runs the registry sync, so a tool file that is added, edited
 * or deleted takes effect without a restart.
 *
 * Two ways of noticing:
 * - events (the default): node:fs `watch` with `recursive: true`. On Linux, Node (20+) keeps one inotify
 *   watch per directory and adds sub-directories created later; checked on Node 24 here: it reports file
 *   creation, edits, atomic renames (write a temporary file, rename it over), deletion, and
 *   sub-directories created or removed while watching. It is silent, though, on a directory that does not
 *   exist (no error, no events) and after the watched directory itself is removed (one event with no file
 *   name, then nothing, even once it is re-created). inotify also misses changes made on another host
 *   through a network filesystem (NFS, SMB, some container volume drivers). Hence
 * - polling: every `pollMs`, a fingerprint of the directory (each `*.json` file's path, inode, size and
 *   mtime) is compared with the previous one. Chosen by setting `pollMs` (TOOLS_POLL_MS); used instead of
 *   events, with a warning, when the directory is missing at start, when it disappears, or when the
 *   watch reports an error; polling then also notices the directory coming back.
 * A change only schedules a run: runs are debounced (an editor's burst of writes makes one run) and never
 * overlap (a change during a run queues exactly one more). Each run re-reads the whole directory, so a
 * coalesced or lost event costs nothing; a failed run is retried after a pause.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@agentmesh/runtime';

/** Polling interval when events were wanted but cannot be used. */
export const FALLBACK_POLL_MS = 2_000;
/** Pause before a failed run (say, NATS briefly unreachable) is tried again. */
export const RETRY_AFTER_FAILURE_MS = 5_000;

export const WatchMode = { EVENTS: 'events', POLLING: 'polling' } as const;
export type WatchMode = (typeof WatchMode)[keyof typeof WatchMode];

export interface ToolDirectoryWatchOptions {
  dir: string;
  /** Quiet time after the last change before a run starts. */
  debounceMs: number;
  /** Poll at this interval instead of using filesystem events. */
  pollMs?: number | undefined;
  /** Pause before a failed run is tried again. Default {@link RETRY_AFTER_FAILURE_MS}. */
  retryAfterFailureMs?: number | undefined;
  /** Brings the registry in step with the directory; run once at start, then after changes. */
  sync: () => Promise<void>;
  log: Logger;
}

export interface ToolDirectoryWatch {
  readonly mode: WatchMode;
  /** Stops noticing changes and waits for a run in progress. */
  stop(): Promise<void>;
}

/**
 * Starts watching, then runs the first sync and resolves after it. A failing first sync rejects (and
 * stops the watch): a service that cannot reach its registry at start should not come up.
 */
export async function watchToolDirectory(options: ToolDirectoryWatchOptions): Promise<ToolDirectoryWatch> {
  const watcher = new ToolDirectoryWatcher(options);
  await watcher.start();
  try {
    await watcher.runNow();
  } catch (error) {
    await watcher.stop();
    throw error;
  }
  return watcher;
}

class ToolDirectoryWatcher implements ToolDirectoryWatch {
  mode: WatchMode = WatchMode.EVENTS;
  private stopped = false;
  private events: FSWatcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private fingerprint = '';
  private debounceTimer: NodeJS.Timeout | undefined;
  /** The run that has been queued but has not started: later changes are covered by it. */
  private queued: Promise<void> | undefined;
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly options: ToolDirectoryWatchOptions) {}

  async start(): Promise<void> {
    const { dir, pollMs, log } = this.options;
    if (pollMs !== undefined) {
      await this.startPolling(pollMs);
      return;
    }
    if (!(await isDirectory(dir))) {
      log.warn({ tools_dir: dir }, 'tools directory does not exist (yet); polling it');
      await this.startPolling(FALLBACK_POLL_MS);
      return;
    }
    try {
      this.events = watch(dir, { recursive: true }, (_event, file) => {
        // No file name: the event is about the watched directory itself, which may be gone.
        if (!file) void this.pollIfDirectoryGone();
        this.schedule(this.options.debounceMs);
      });
      this.events.on('error', (error) => {
        log.warn({ tools_dir: dir, err: error }, 'tool directory watch failed; polling instead');
        void this.fallBackToPolling();
      });
    } catch (error) {
      log.warn({ tools_dir: dir, err: error }, 'tool directory cannot be watched; polling instead');
      await this.startPolling(FALLBACK_POLL_MS);
    }
  }

  /** Queues a run (or joins the queued one) and waits for it; rejects when it fails. */
  runNow(): Promise<void> {
    if (this.queued) return this.queued;
    const run = this.tail.then(() => {
      this.queued = undefined;
      return this.stopped ? undefined : this.options.sync();
    });
    this.queued = run;
    this.tail = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.debounceTimer);
    clearTimeout(this.pollTimer);
    this.events?.close();
    await this.tail;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      this.runNow().catch((error: unknown) => {
        const retryInMs = this.options.retryAfterFailureMs ?? RETRY_AFTER_FAILURE_MS;
        this.options.log.error(
          { tools_dir: this.options.dir, err: error, retry_in_ms: retryInMs },
          'tool registry sync failed; retrying',
        );
        this.schedule(retryInMs);
      });
    }, delayMs);
  }

  private async pollIfDirectoryGone(): Promise<void> {
    if (await isDirectory(this.options.dir)) return;
    this.options.log.warn({ tools_dir: this.options.dir }, 'tools directory removed; polling it');
    await this.fallBackToPolling();
  }

  private async fallBackToPolling(): Promise<void> {
    this.events?.close();
    this.events = undefined;
    if (this.stopped || this.mode === WatchMode.POLLING) return;
    await this.startPolling(FALLBACK_POLL_MS);
    // Changes between the failure and the first poll were not seen: look once more.
    this.schedule(this.options.debounceMs);
  }

  private async startPolling(intervalMs: number): Promise<void> {
    this.mode = WatchMode.POLLING;
    this.fingerprint = await directoryFingerprint(this.options.dir);
    const poll = async (): Promise<void> => {
      const current = await directoryFingerprint(this.options.dir);
      if (current !== this.fingerprint) {
        this.fingerprint = current;
        this.schedule(this.options.debounceMs);
      }
    };
    const next = (): void => {
      if (this.stopped) return;
      this.pollTimer = setTimeout(() => void poll().finally(next), intervalMs);
    };
    next();
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

/** What polling compares: every `*.json` file's path, inode, size and mtime, or why the listing failed. */
async function directoryFingerprint(dir: string): Promise<string> {
  let entries: string[];
  try {
    entries = await readdir(dir, { recursive: true });
  } catch (error) {
    return `unlistable:${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
  const lines = await Promise.all(
    entries
      .filter((entry) => entry.endsWith('.json'))
      .map(async (entry) => {
        try {
          const info = await stat(join(dir, entry));
          return `${entry}\t${info.ino}\t${info.size}\t${info.mtimeMs}`;
        } catch {
          return `${entry}\tgone`;
        }
      }),
  );
  return lines.sort().join('\n');
}
