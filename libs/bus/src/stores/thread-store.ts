/**
 * Threads on JetStream: a thread's entries (turns, compactions) are messages of MESH_THREADS on
 * `mesh.threads.<account>.<thread_id>`, its record (metadata, strategy, the active run and the queued
 * ones) is KV `mesh_threads` `<account>.<thread_id>`, changed by compare-and-set only.
 *
 * Exactly-once turns: a turn is published with Nats-Msg-Id `<account>.<thread_id>.<trace_id>` (a
 * redelivered attempt's copy inside the duplicate window is dropped) and with the thread's last sequence as
 * it was read as an expected-last-subject-sequence fence; when the fence fails the entries since are read,
 * and a turn of the same trace found there is the answer (an earlier attempt appended it), so a copy is
 * never stored even after the duplicate window or a NATS restart.
 *
 * One active run per thread: `admit` claims the record's `active` slot for a run by compare-and-set, so
 * of two gateways admitting at once one wins and the other sees the winner. A run queued behind it keeps
 * its ReceivedTask in the record; `release` (by whoever sees the active run end) frees the slot and
 * promotes the head of the queue, publishing its task (Nats-Msg-Id `<account>.<trace_id>`: a republish is
 * dropped). A promoted run keeps its task in the record until its publish is confirmed, so a crash between
 * the two is repaired by the next `release` or `admit` of the thread. A claim whose task has ended (the
 * caller's `isFinal`) is treated as released, so a lost release never wedges a thread.
 */
import type { StoredThreadEntry } from '@agentmesh/protocol';
import {
  AccountId,
  isFinalTaskStatus,
  retainedEntries,
  Streams,
  taskKey,
  taskReceivedSubject,
  THREAD_RUNS_KEPT,
  threadEntriesSubject,
  ThreadEntry,
  threadKey,
  ThreadRecord,
  type CreateThreadRequest,
  type ReceivedTask,
  type ThreadRun,
  type ThreadStrategy,
  type ThreadSummary,
  type ThreadTurnEntry,
} from '@agentmesh/protocol';
import {
  type JetStreamClient,
  type JetStreamManager,
  type MsgRequest,
  type NextMsgRequest,
} from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { ThreadContentionError } from '../errors.js';
import { isLostCompareAndSet } from '../jetstream-api-error.js';
import { publishWithRetry } from '../jetstream-publish.js';
import { decodeJson, encodeJson } from '../json.js';
import { getStoredMessage } from '../stored-message.js';
import { visitLatestKeys } from './latest-keys.js';
import type { TaskStatusStore } from './task-status-store.js';

const MAX_CAS_ATTEMPTS = 20;

export interface VersionedThread {
  readonly record: ThreadRecord;
  readonly revision: number;
}

/** What `admit` did with a run. */
export type ThreadAdmission =
  | { kind: 'run' }
  | { kind: 'queued'; active: string }
  | { kind: 'busy'; active: string }
  | { kind: 'cancel_active'; active: string; mode: 'interrupt' | 'rollback' }
  | { kind: 'not_found' };

/** Whether the task of a run has ended (its status is final); a claim held by such a run is stale. */
export type RunEnded = (accountId: string, traceId: string) => Promise<boolean>;

/** A run ended by its status record: final, or no record at all (expired, never written). */
export function runEndedByStatus(statuses: TaskStatusStore): RunEnded {
  return async (accountId, traceId) => {
    const record = await statuses.get(accountId, traceId);
    return record === undefined || isFinalTaskStatus(record.status);
  };
}

export function threadSummary(record: ThreadRecord): ThreadSummary {
  return {
    thread_id: record.thread_id,
    created_at: record.created_at,
    updated_at: record.updated_at,
    metadata: record.metadata,
    strategy: record.strategy,
    ...(record.compaction === undefined ? {} : { compaction: record.compaction }),
    ...(record.retention === undefined ? {} : { retention: record.retention }),
    status: record.active === undefined ? 'idle' : 'running',
    ...(record.active === undefined ? {} : { active_trace_id: record.active.trace_id }),
    queued_trace_ids: record.queue.map((run) => run.trace_id),
  };
}

export class ThreadStore {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly kv: KV,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async get(accountId: string, threadId: string): Promise<VersionedThread | undefined> {
    const key = threadKey(accountId, threadId);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { record: decodeJson(ThreadRecord, entry.value, `mesh_threads/${key}`), revision: entry.revision };
  }

  /** Creates a thread; undefined when the id is taken in this account. */
  async create(
    accountId: string,
    threadId: string,
    request: CreateThreadRequest,
  ): Promise<ThreadRecord | undefined> {
    const at = this.now().toISOString();
    const record = ThreadRecord.parse({
      thread_id: threadId,
      account_id: accountId,
      created_at: at,
      updated_at: at,
      metadata: request.metadata ?? {},
      ...(request.strategy === undefined ? {} : { strategy: request.strategy }),
      ...(request.compaction === undefined ? {} : { compaction: request.compaction }),
      ...(request.retention === undefined ? {} : { retention: request.retention }),
    });
    try {
      await this.kv.create(threadKey(accountId, threadId), encodeJson(record));
      return record;
    } catch (error) {
      if ((await this.get(accountId, threadId)) !== undefined) return undefined;
      throw error;
    }
  }

  /** The account's threads, newest first; `before` is the `<created_at>|<thread_id>` of the last one seen. */
  async list(
    accountId: string,
    limit: number,
    before?: string,
  ): Promise<{ threads: ThreadRecord[]; next_before?: string }> {
    const keys: string[] = [];
    await visitLatestKeys(this.kv, `${AccountId.parse(accountId)}.*`, (key) => keys.push(key));
    const records: ThreadRecord[] = [];
    for (const key of keys) {
      const threadId = key.slice(accountId.length + 1);
      const found = await this.get(accountId, threadId);
      if (found?.record.account_id === accountId) records.push(found.record);
    }
    const cursor = (record: ThreadRecord): string => `${record.created_at}|${record.thread_id}`;
    records.sort((a, b) => (cursor(a) < cursor(b) ? 1 : cursor(a) > cursor(b) ? -1 : 0));
    const page = records.filter((record) => before === undefined || cursor(record) < before).slice(0, limit);
    const last = page.at(-1);
    const more = last !== undefined && records.some((record) => cursor(record) < cursor(last));
    return { threads: page, ...(more ? { next_before: cursor(last) } : {}) };
  }

  /** Deletes the record and every entry; false when there was no thread. */
  async delete(accountId: string, threadId: string): Promise<boolean> {
    const found = await this.get(accountId, threadId);
    if (found === undefined) return false;
    await this.kv.purge(threadKey(accountId, threadId));
    await this.jsm.streams.purge(Streams.THREADS.name, { filter: threadEntriesSubject(accountId, threadId) });
    return true;
  }

  /** The thread's stored entries, in order, from stream sequence `fromSeq` on. */
  async entries(accountId: string, threadId: string, fromSeq = 1): Promise<StoredThreadEntry[]> {
    const subject = threadEntriesSubject(accountId, threadId);
    const out: StoredThreadEntry[] = [];
    let seq = fromSeq;
    for (;;) {
      const next: NextMsgRequest = { seq, next_by_subj: subject };
      const message = await getStoredMessage(this.jsm, Streams.THREADS.name, next as unknown as MsgRequest);
      if (!message) return out;
      out.push({
        seq: message.seq,
        entry: decodeJson(ThreadEntry, message.data, `${subject}#${message.seq}`),
      });
      seq = message.seq + 1;
    }
  }

  /**
   * The entries the thread's retention keeps (all of them without one): what a run is given and what is
   * listed. Reading them purges nothing (assemblers may only read the stream); see `purgeExpired`.
   */
  async retained(accountId: string, threadId: string, record: ThreadRecord): Promise<StoredThreadEntry[]> {
    return retainedEntries(await this.entries(accountId, threadId), record.retention, this.now());
  }

  /**
   * Purges from the stream the thread's entries its retention no longer keeps (one purge of its subject
   * below the first kept sequence); the number purged. Its last sequence only changes when every entry
   * goes, and then an appender's fence fails once and is read again (see `append`).
   */
  async purgeExpired(accountId: string, threadId: string, record: ThreadRecord): Promise<number> {
    if (record.retention === undefined) return 0;
    const all = await this.entries(accountId, threadId);
    const kept = retainedEntries(all, record.retention, this.now());
    const last = all.at(-1);
    if (last === undefined || kept.length === all.length) return 0;
    const { purged } = await this.jsm.streams.purge(Streams.THREADS.name, {
      filter: threadEntriesSubject(accountId, threadId),
      seq: kept[0]?.seq ?? last.seq + 1,
    });
    return purged;
  }

  /** The stream sequence of the thread's last entry; 0 when it has none. */
  async lastSeq(accountId: string, threadId: string): Promise<number> {
    const last = await getStoredMessage(this.jsm, Streams.THREADS.name, {
      last_by_subj: threadEntriesSubject(accountId, threadId),
    });
    return last?.seq ?? 0;
  }

  /**
   * Appends an entry once. `msgId` names it (a turn: its trace); `afterSeq` is the thread's last sequence
   * as the writer read it. When somebody appended since, the entries after `afterSeq` are read: an entry
   * with the same `sameAs` identity is the earlier copy (answered, nothing stored); otherwise it is appended
   * after them. Returns the entry's sequence.
   */
  async append(
    accountId: string,
    threadId: string,
    entry: ThreadEntry,
    msgIdSuffix: string,
    afterSeq: number,
    sameAs: (stored: ThreadEntry) => boolean,
  ): Promise<{ seq: number; duplicate: boolean }> {
    const subject = threadEntriesSubject(accountId, threadId);
    const payload = encodeJson(ThreadEntry.parse(entry));
    const msgID = `${threadKey(accountId, threadId)}.${msgIdSuffix}`;
    let expected = afterSeq;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      try {
        const { ack } = await publishWithRetry(this.js, subject, payload, {
          msgID,
          expect: { lastSubjectSequence: expected },
        });
        return { seq: ack.seq, duplicate: ack.duplicate };
      } catch (error) {
        if (!isLostCompareAndSet(error)) throw error;
      }
      const since = await this.entries(accountId, threadId, expected + 1);
      const earlier = since.find((stored) => sameAs(stored.entry));
      if (earlier !== undefined) return { seq: earlier.seq, duplicate: true };
      expected = since.at(-1)?.seq ?? (await this.lastSeq(accountId, threadId));
    }
    throw new ThreadContentionError(subject, MAX_CAS_ATTEMPTS);
  }

  /** Appends a run's turn exactly once (see the module header); skipped when the thread was deleted. */
  async appendTurn(
    accountId: string,
    threadId: string,
    turn: ThreadTurnEntry,
    afterSeq: number,
  ): Promise<{ seq: number; duplicate: boolean } | undefined> {
    if ((await this.get(accountId, threadId)) === undefined) return undefined;
    return this.append(
      accountId,
      threadId,
      turn,
      turn.trace_id,
      afterSeq,
      (stored) => stored.type === 'turn' && stored.trace_id === turn.trace_id,
    );
  }

  /**
   * Applies `change` to the record and stores it if nobody wrote in between; retries otherwise.
   * `change` returning undefined leaves it as it is. Undefined when there is no thread.
   */
  async update(
    accountId: string,
    threadId: string,
    change: (current: ThreadRecord) => ThreadRecord | undefined,
  ): Promise<VersionedThread | undefined> {
    const key = threadKey(accountId, threadId);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const current = await this.get(accountId, threadId);
      if (current === undefined) return undefined;
      const next = change(structuredClone(current.record));
      if (next === undefined) return current;
      const parsed = ThreadRecord.parse({ ...next, updated_at: this.now().toISOString() });
      try {
        const revision = await this.kv.update(key, encodeJson(parsed), current.revision);
        return { record: parsed, revision };
      } catch (error) {
        if (!isLostCompareAndSet(error)) throw error;
      }
    }
    throw new ThreadContentionError(key, MAX_CAS_ATTEMPTS);
  }

  /**
   * Claims the thread for a run, or handles it by `strategy` when another run is active: `reject` →
   * busy; `enqueue` → queued behind (its task kept in the record until promoted); `interrupt` and
   * `rollback` → queued behind, and the active run marked to be cancelled that way (the caller cancels it).
   * A claim whose run has ended (`ended`) is released first.
   */
  async admit(
    accountId: string,
    threadId: string,
    run: { trace_id: string; task: ReceivedTask },
    strategy: ThreadStrategy | undefined,
    ended: RunEnded,
  ): Promise<ThreadAdmission> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const current = await this.get(accountId, threadId);
      if (current === undefined) return { kind: 'not_found' };
      const active = current.record.active;
      if (
        active !== undefined &&
        active.trace_id !== run.trace_id &&
        (await ended(accountId, active.trace_id))
      ) {
        await this.release(accountId, threadId, active.trace_id);
        continue;
      }
      let admission: ThreadAdmission | undefined;
      const since = this.now().toISOString();
      const stored = await this.update(accountId, threadId, (record) => {
        admission = undefined;
        remember(record, run.trace_id);
        if (
          record.active?.trace_id === run.trace_id ||
          record.queue.some((q) => q.trace_id === run.trace_id)
        ) {
          admission =
            record.active?.trace_id === run.trace_id
              ? { kind: 'run' }
              : { kind: 'queued', active: record.active?.trace_id ?? '' };
          return undefined;
        }
        if (record.active === undefined && record.queue.length === 0) {
          admission = { kind: 'run' };
          return { ...record, active: { trace_id: run.trace_id, since } };
        }
        if (record.active !== undefined && active?.trace_id !== record.active.trace_id) {
          // Another writer changed the active run since it was checked: check it again.
          return undefined;
        }
        const chosen = strategy ?? record.strategy;
        const holder = record.active?.trace_id ?? '';
        if (chosen === 'reject') {
          admission = { kind: 'busy', active: holder };
          return undefined;
        }
        const queued: ThreadRun = { trace_id: run.trace_id, since, task: run.task };
        if (chosen === 'enqueue' || record.active === undefined) {
          admission = { kind: 'queued', active: holder };
          return { ...record, queue: [...record.queue, queued] };
        }
        admission = { kind: 'cancel_active', active: holder, mode: chosen };
        return {
          ...record,
          active: { ...record.active, cancel_mode: record.active.cancel_mode ?? chosen },
          queue: [...record.queue, queued],
        };
      });
      if (stored === undefined) return { kind: 'not_found' };
      if (admission === undefined) continue;
      if (admission.kind === 'queued' && stored.record.active === undefined) {
        // Queued behind runs that wait for a promotion nobody did: promote now.
        await this.promote(accountId, threadId);
      }
      return admission;
    }
    throw new ThreadContentionError(threadKey(accountId, threadId), MAX_CAS_ATTEMPTS);
  }

  /**
   * Frees the thread from the run `traceId` (nothing when another run holds it) and promotes the next
   * queued run, publishing its task. Returns the promoted run's trace id, if any.
   */
  async release(
    accountId: string,
    threadId: string,
    traceId: string,
    { publish = true }: { publish?: boolean } = {},
  ): Promise<string | undefined> {
    await this.update(accountId, threadId, (record) => {
      const queued = record.queue.filter((run) => run.trace_id !== traceId);
      if (record.active?.trace_id !== traceId && queued.length === record.queue.length) return undefined;
      const { active: _active, ...rest } = record;
      return record.active?.trace_id === traceId ? { ...rest, queue: queued } : { ...record, queue: queued };
    });
    return this.promote(accountId, threadId, { publish });
  }

  /**
   * Makes the head of the queue the active run when none is, and publishes its task — or, with
   * `publish: false` (an executor, which may not queue tasks), leaves that to the gateways' promoters
   * (ThreadPromoter), which publish every active run still carrying its task.
   */
  async promote(
    accountId: string,
    threadId: string,
    { publish = true }: { publish?: boolean } = {},
  ): Promise<string | undefined> {
    const stored = await this.update(accountId, threadId, (record) => {
      if (record.active !== undefined) return undefined;
      const [head, ...rest] = record.queue;
      if (head === undefined) return undefined;
      return { ...record, active: { ...head, since: this.now().toISOString() }, queue: rest };
    });
    const active = stored?.record.active;
    if (active?.task === undefined) return undefined;
    if (publish) await this.publishPromoted(accountId, threadId);
    return active.trace_id;
  }

  /**
   * Publishes the task of the thread's active run if it still carries one (promoted, not yet published),
   * then drops it from the record. Publishing twice is harmless: the task stream keeps one message per
   * Nats-Msg-Id `<account>.<trace_id>`, and a task that ran already ends at its stored terminal event.
   */
  async publishPromoted(accountId: string, threadId: string): Promise<string | undefined> {
    const active = (await this.get(accountId, threadId))?.record.active;
    if (active?.task === undefined) return undefined;
    await publishWithRetry(this.js, taskReceivedSubject(accountId), encodeJson(active.task), {
      msgID: taskKey(accountId, active.trace_id),
    });
    await this.update(accountId, threadId, (record) => {
      if (record.active?.trace_id !== active.trace_id || record.active.task === undefined) return undefined;
      const { task: _task, ...published } = record.active;
      return { ...record, active: published };
    });
    return active.trace_id;
  }
}

function remember(record: ThreadRecord, traceId: string): void {
  if (record.runs.includes(traceId)) return;
  record.runs.push(traceId);
  if (record.runs.length > THREAD_RUNS_KEPT) record.runs.splice(0, record.runs.length - THREAD_RUNS_KEPT);
}
