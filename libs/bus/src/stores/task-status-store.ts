/**
 * Task status in KV `mesh_tasks` (key: `<account>.<trace_id>`, so one account can neither read nor
 * claim another's trace id): queued by the gateway, running/done/error/cancelled
 * by the assembler and executors, and a cancel request that a task not yet started honours.
 * Updates are compare-and-set on the entry's revision, so concurrent writers never lose a change.
 */
import { AccountId, taskKey, TaskStatusRecord } from '@agentmesh/protocol';
import { JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { TaskStatusContentionError, TaskStatusWriteError } from '../errors.js';
import { decodeJson, encodeJson } from '../json.js';
import { visitLatestKeys } from './latest-keys.js';
import { RecentKeys } from './recent-keys.js';
import { isLostCompareAndSet } from '../jetstream-api-error.js';

const MAX_CAS_ATTEMPTS = 10;
/** Records a filtered listing reads at once. */
const READ_BATCH = 50;

/** A status record and the KV revision it was stored under. */
export interface VersionedTaskStatus {
  readonly record: TaskStatusRecord;
  readonly revision: number;
}

export class TaskStatusStore {
  constructor(private readonly kv: KV) {}

  /**
   * The account's `limit` most recently written task records, newest first. Keys arrive in the order of
   * their last write, so only the last `limit` are kept while the account's keys stream past
   * ({@link RecentKeys}): memory stays bounded by `limit`, and only those records are read. The listing
   * ends at the bucket's last write ({@link visitLatestKeys}), so a task written while it runs is kept.
   */
  async listRecent(accountId: string, limit: number): Promise<TaskStatusRecord[]> {
    const recent = new RecentKeys(limit);
    await visitLatestKeys(this.kv, `${AccountId.parse(accountId)}.*`, (key) => recent.add(key));
    const records = await Promise.all(recent.keys().map(async (key) => (await this.read(key))?.record));
    return records.filter((record): record is TaskStatusRecord => record?.account_id === accountId).reverse();
  }

  /**
   * Up to `limit` of the account's records that pass `matches`, newest first, from its `scanLimit` most
   * recently written keys (a filtered listing reads more records than it returns, so it is bounded by what
   * it reads, not by what it finds). Records are read newest first, a batch at a time, until `limit` match.
   */
  async listMatching(
    accountId: string,
    limit: number,
    matches: (record: TaskStatusRecord) => boolean,
    scanLimit: number,
  ): Promise<TaskStatusRecord[]> {
    const recent = new RecentKeys(scanLimit);
    await visitLatestKeys(this.kv, `${AccountId.parse(accountId)}.*`, (key) => recent.add(key));
    const newestFirst = recent.keys().reverse();
    const found: TaskStatusRecord[] = [];
    for (let start = 0; start < newestFirst.length && found.length < limit; start += READ_BATCH) {
      const batch = await Promise.all(
        newestFirst.slice(start, start + READ_BATCH).map(async (key) => (await this.read(key))?.record),
      );
      for (const record of batch) {
        if (record?.account_id === accountId && matches(record) && found.length < limit) found.push(record);
      }
    }
    return found;
  }

  async get(accountId: string, traceId: string): Promise<TaskStatusRecord | undefined> {
    return (await this.read(taskKey(accountId, traceId)))?.record;
  }

  /** The record with its revision: what a writer that reads before it decides passes to {@link updateFrom}. */
  async getVersioned(accountId: string, traceId: string): Promise<VersionedTaskStatus | undefined> {
    return this.read(taskKey(accountId, traceId));
  }

  private async read(key: string): Promise<VersionedTaskStatus | undefined> {
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return {
      record: decodeJson(TaskStatusRecord, entry.value, `mesh_tasks/${key}`),
      revision: entry.revision,
    };
  }

  /** Stores the first record of a task; false when the task has a record already. */
  async create(record: TaskStatusRecord): Promise<boolean> {
    const key = taskKey(record.account_id, record.trace_id);
    try {
      await this.kv.create(key, encodeJson(TaskStatusRecord.parse(record)));
      return true;
    } catch (error) {
      if ((await this.read(key)) !== undefined) return false;
      throw new TaskStatusWriteError(key, !(error instanceof JetStreamApiError), { cause: error });
    }
  }

  /**
   * Applies `change` to the current record (or to `initial` when there is none) and stores the result
   * if nobody wrote in between; retries otherwise. `change` returning undefined leaves it unchanged.
   */
  async update(
    accountId: string,
    traceId: string,
    change: (current: TaskStatusRecord | undefined) => TaskStatusRecord | undefined,
  ): Promise<TaskStatusRecord | undefined> {
    return (await this.updateFrom(accountId, traceId, change))?.record;
  }

  /**
   * {@link update} that starts from `known` — the record and revision this writer stored or read last —
   * instead of reading first: a writer that owns a task's status (its executor) writes each change in one
   * request, and reads only when somebody else wrote in between (a cancel request). Returns the record as
   * stored, with its revision, for the next change.
   */
  async updateFrom(
    accountId: string,
    traceId: string,
    change: (current: TaskStatusRecord | undefined) => TaskStatusRecord | undefined,
    known?: VersionedTaskStatus,
  ): Promise<VersionedTaskStatus | undefined> {
    const key = taskKey(accountId, traceId);
    let current = known ?? (await this.read(key));
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      if (attempt > 0) current = await this.read(key);
      const next = change(current?.record);
      if (next === undefined) return current;
      const parsed = TaskStatusRecord.parse(next);
      if (parsed.account_id !== accountId || parsed.trace_id !== traceId) {
        throw new Error(`a status change of ${key} produced the record of another task`);
      }
      const payload = encodeJson(parsed);
      try {
        const revision = current
          ? await this.kv.update(key, payload, current.revision)
          : await this.kv.create(key, payload);
        return { record: parsed, revision };
      } catch (error) {
        // Somebody else wrote first: read again and reapply. Anything else is not ours to retry.
        if (!isLostCompareAndSet(error)) {
          throw new TaskStatusWriteError(key, !(error instanceof JetStreamApiError), { cause: error });
        }
      }
    }
    throw new TaskStatusContentionError(key, MAX_CAS_ATTEMPTS);
  }
}
