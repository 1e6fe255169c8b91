/**
 * KV `mesh_parked_tasks` (key `<account>.<trace_id>`): tasks waiting for a person's approval, held by no
 * executor. The executor that parks a task stores it here (with its sealed vault, as delivered) before it
 * writes `approval_requested` and acks the delivery; the gateway records decisions and cancels; executors
 * expire approvals past their timeout. Whoever makes the task ready to resume queues it again
 * ({@link ParkedTaskStore.resumeIfReady}); the attempt that resumes it deletes the entry once its decisions
 * are in the event log (`approval_decided`). Every change is compare-and-set on the entry's revision.
 */
import { ParkedTask, RESUMED_PARK_HEADER, taskKey } from '@agentmesh/protocol';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { ParkedTaskContentionError } from '../errors.js';
import { decodeJson, encodeJson } from '../json.js';
import { isLostCompareAndSet } from '../jetstream-api-error.js';
import { publishWithRetry } from '../jetstream-publish.js';
import { cancelApprovals, isReadyToResume } from './approval-decisions.js';

const MAX_CAS_ATTEMPTS = 10;

/** A parked task and the KV revision it was read at. */
export interface VersionedParkedTask {
  readonly parked: ParkedTask;
  readonly revision: number;
}

export class ParkedTaskStore {
  constructor(
    /** The bucket itself, for a watch over every parked task (the executors' approval timeouts). */
    readonly kv: KV,
  ) {}

  async get(accountId: string, traceId: string): Promise<VersionedParkedTask | undefined> {
    return this.read(taskKey(accountId, traceId));
  }

  /** Decodes a KV entry of the bucket (from a watch); undefined for a delete or purge. */
  static decode(entry: {
    key: string;
    value: Uint8Array;
    operation: string;
    revision: number;
  }): VersionedParkedTask | undefined {
    if (entry.operation !== 'PUT') return undefined;
    return {
      parked: decodeJson(ParkedTask, entry.value, `mesh_parked_tasks/${entry.key}`),
      revision: entry.revision,
    };
  }

  /** Stores a task as parked; an entry left from an earlier park of the task is replaced. */
  async park(parked: ParkedTask): Promise<VersionedParkedTask> {
    const key = taskKey(parked.account_id, parked.trace_id);
    const payload = encodeJson(ParkedTask.parse(parked));
    return { parked, revision: await this.kv.put(key, payload) };
  }

  /**
   * Applies `change` to the current entry and stores the result if nobody wrote in between; retries
   * otherwise. `change` returning undefined (or no entry) leaves it as it is, and that is returned.
   */
  async update(
    accountId: string,
    traceId: string,
    change: (current: ParkedTask) => ParkedTask | undefined,
  ): Promise<VersionedParkedTask | undefined> {
    const key = taskKey(accountId, traceId);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const current = await this.read(key);
      if (current === undefined) return undefined;
      const next = change(current.parked);
      if (next === undefined) return current;
      const parsed = ParkedTask.parse(next);
      if (parsed.account_id !== accountId || parsed.trace_id !== traceId) {
        throw new Error(`a change of parked task ${key} produced another task`);
      }
      try {
        return { parked: parsed, revision: await this.kv.update(key, encodeJson(parsed), current.revision) };
      } catch (error) {
        if (!isLostCompareAndSet(error)) throw error;
      }
    }
    throw new ParkedTaskContentionError(key, MAX_CAS_ATTEMPTS);
  }

  /**
   * Queues the task again on its subject when it is ready to resume (every approval decided, or one
   * expired or cancelled) and nobody has yet, then marks it resumed. The message carries
   * RESUMED_PARK_HEADER, so the executor resumes it from its events. Returns whether this call or an
   * earlier one queued it. Several callers may race here: the publish carries a Nats-Msg-Id of the park,
   * so the task is stored once in MESH_TASKS; a caller that dies between publish and mark leaves the
   * mark to the next one, whose publish is then a duplicate.
   */
  async resumeIfReady(
    js: JetStreamClient,
    accountId: string,
    traceId: string,
    options: { now?: Date; headers?: MsgHdrs } = {},
  ): Promise<boolean> {
    const current = await this.get(accountId, traceId);
    if (current === undefined) return false;
    if (current.parked.resumed_at !== undefined) return true;
    if (!isReadyToResume(current.parked)) return false;
    const { parked } = current;
    const headers = options.headers ?? natsHeaders();
    headers.set(RESUMED_PARK_HEADER, String(parked.attempt));
    await publishWithRetry(js, parked.subject, encodeJson(parked.task), {
      msgID: resumeMessageId(parked),
      headers,
    });
    const resumedAt = (options.now ?? new Date()).toISOString();
    await this.update(accountId, traceId, (task) =>
      task.resumed_at === undefined && task.parked_at === parked.parked_at
        ? { ...task, resumed_at: resumedAt }
        : undefined,
    );
    return true;
  }

  /**
   * Ends a parked task's wait because the task was cancelled: its pending approvals are cancelled and it
   * is queued again, so an executor takes it up and ends it CANCELLED. Returns whether it was queued;
   * false when the task is not parked (nothing to do: a running task hears the cancel itself).
   */
  async cancelWait(
    js: JetStreamClient,
    accountId: string,
    traceId: string,
    options: { now?: Date; headers?: MsgHdrs } = {},
  ): Promise<boolean> {
    const now = options.now ?? new Date();
    const parked = await this.update(accountId, traceId, (current) => cancelApprovals(current, now));
    if (parked === undefined) return false;
    return this.resumeIfReady(js, accountId, traceId, { ...options, now });
  }

  /** Deletes the entry, only if it is still the one read at `revision` (a newer park stays). */
  async delete(accountId: string, traceId: string, revision: number): Promise<boolean> {
    try {
      await this.kv.delete(taskKey(accountId, traceId), { previousSeq: revision });
      return true;
    } catch (error) {
      if (isLostCompareAndSet(error)) return false;
      throw error;
    }
  }

  private async read(key: string): Promise<VersionedParkedTask | undefined> {
    const entry = await this.kv.get(key);
    return entry ? ParkedTaskStore.decode(entry) : undefined;
  }
}

/** One id per park of a task: its queued-again message is stored once however many callers race. */
export function resumeMessageId(parked: ParkedTask): string {
  return `${parked.account_id}.${parked.trace_id}.resume.${parked.attempt}.${Date.parse(parked.parked_at)}`;
}
