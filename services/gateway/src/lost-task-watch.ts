/**
 * Publishing again a task whose message the task queue lost. nats-server before 2.10 can, after a node's
 * loss or pause, drop a work-queue message it had acknowledged (its stream and consumer replicas
 * disagree on what was delivered): the task stays `queued` for ever with nothing left to run it. Seen
 * in the chaos runs on 2.9.10: a task accepted during a node's pause never reached an assembler.
 *
 * The gateway keeps each task it published (its encoded message) until the task's terminal event, and
 * looks at one still without it after `afterMs`. The task counts as lost only when, on two checks in a
 * row (`everyMs` apart, longer than an executor's ack wait, so a delivery to a dead or frozen instance has
 * been handed on meanwhile):
 * - its status record still says `queued` at attempt 0 and no event of it is stored: nothing started it;
 * - its received message is no longer in MESH_TASKS: no assembler will be handed it;
 * - no task waits undelivered at either stage: an assembled copy of it would be among those.
 * It is then published again under a new message id (`<account>.<trace_id>:redrive-<n>`, the same on
 * every gateway, so two gateways re-driving one task store it once), which the assembler carries into its
 * own. A copy that was not lost after all is harmless: the executor's fenced event log keeps one attempt,
 * as for any redelivery.
 *
 * Only this gateway's own publishes are kept (in memory, within `maxBytes`); a restarted gateway forgets
 * its tasks, whose clients may still submit them again.
 */
import { isFinalTaskStatus, TaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';

export interface LostTaskWatchOptions {
  /** How long a task may go without its terminal event before it is looked at; 0 turns the watch off. */
  afterMs: number;
  /** Pace of the checks; two suspicious ones in a row re-drive a task. */
  everyMs: number;
  /** Bytes of task messages kept at most; a task published beyond them is not watched. */
  maxBytes: number;
  /** Re-drives of one task at most. */
  maxRedrives: number;
  status: (accountId: string, traceId: string) => Promise<TaskStatusRecord | undefined>;
  hasEvents: (accountId: string, traceId: string) => Promise<boolean>;
  /** Whether MESH_TASKS still holds the message stored at `seq`. */
  stillQueued: (seq: number) => Promise<boolean>;
  /** Tasks waiting undelivered at both stages together (the stage consumers' `num_pending`). */
  waiting: () => Promise<number>;
  /** Publishes the task's message again under re-drive `n`; resolves to its stream sequence. */
  redrive: (task: WatchedTask, n: number) => Promise<number>;
  onRedriven?: (task: WatchedTask, n: number) => void;
  onGaveUp?: (task: WatchedTask) => void;
  onCheckError?: (error: unknown) => void;
  now?: () => number;
}

export interface WatchedTask {
  readonly accountId: string;
  readonly traceId: string;
  /** The encoded ReceivedTask, as published. */
  readonly message: Uint8Array;
}

interface Entry extends WatchedTask {
  /** Stream sequence of its latest publish. */
  seq: number;
  since: number;
  redrives: number;
  suspected: boolean;
}

const entryKey = (accountId: string, traceId: string): string => `${accountId}\u0000${traceId}`;

export class LostTaskWatch {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly now: () => number;
  private readonly timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly options: LostTaskWatchOptions) {
    this.now = options.now ?? (() => Date.now());
    if (options.afterMs > 0) {
      this.timer = setInterval(() => void this.check(), options.everyMs);
      this.timer.unref();
    }
  }

  /** A task this gateway published (stored at `seq`): watched until its terminal event. */
  published(task: WatchedTask, seq: number): void {
    if (this.options.afterMs <= 0) return;
    const key = entryKey(task.accountId, task.traceId);
    const known = this.entries.get(key);
    if (known !== undefined) {
      known.seq = seq;
      return;
    }
    if (this.bytes + task.message.byteLength > this.options.maxBytes) return;
    this.bytes += task.message.byteLength;
    this.entries.set(key, { ...task, seq, since: this.now(), redrives: 0, suspected: false });
  }

  /** The task's terminal event was seen. */
  ended(accountId: string, traceId: string): void {
    this.forget(entryKey(accountId, traceId));
  }

  /** Tasks watched now. */
  get size(): number {
    return this.entries.size;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One round of checks (see the module header); runs on its own timer. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const now = this.now();
      let waiting: number | undefined;
      for (const [key, entry] of [...this.entries]) {
        if (now - entry.since < this.options.afterMs) continue;
        try {
          if (!(await this.unstarted(entry))) {
            this.forget(key);
            continue;
          }
          waiting ??= await this.options.waiting();
          if (waiting > 0 || (await this.options.stillQueued(entry.seq))) {
            entry.suspected = false;
            continue;
          }
          if (!entry.suspected) {
            entry.suspected = true;
            continue;
          }
          await this.redrive(key, entry);
        } catch (error) {
          // Asked again next round; the other tasks are still checked now.
          this.options.onCheckError?.(error);
        }
      }
    } finally {
      this.checking = false;
    }
  }

  /** Nothing started the task: `queued`, attempt 0, no event stored. A task gone from the store is not watched. */
  private async unstarted(entry: Entry): Promise<boolean> {
    const record = await this.options.status(entry.accountId, entry.traceId);
    if (record === undefined || isFinalTaskStatus(record.status)) return false;
    if (record.status !== TaskStatus.QUEUED || record.attempt > 0) return false;
    return !(await this.options.hasEvents(entry.accountId, entry.traceId));
  }

  private async redrive(key: string, entry: Entry): Promise<void> {
    if (entry.redrives >= this.options.maxRedrives) {
      this.options.onGaveUp?.(entry);
      this.forget(key);
      return;
    }
    const n = entry.redrives + 1;
    entry.seq = await this.options.redrive(entry, n);
    entry.redrives = n;
    entry.suspected = false;
    entry.since = this.now();
    this.options.onRedriven?.(entry, n);
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.message.byteLength;
  }
}
