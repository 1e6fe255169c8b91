/**
 * Task status in KV `mesh_tasks` (key: trace_id): queued by the gateway, running/done/error/cancelled
 * by the assembler and executors, and a cancel request that a task not yet started honours.
 * Updates are compare-and-set on the entry's revision, so concurrent writers never lose a change.
 */
import { TaskStatusRecord } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { decodeJson, encodeJson } from '../json.js';

const MAX_CAS_ATTEMPTS = 10;

export class TaskStatusStore {
  constructor(private readonly kv: KV) {}

  async get(traceId: string): Promise<TaskStatusRecord | undefined> {
    return (await this.read(traceId))?.record;
  }

  private async read(traceId: string): Promise<{ record: TaskStatusRecord; revision: number } | undefined> {
    const entry = await this.kv.get(traceId);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return {
      record: decodeJson(TaskStatusRecord, entry.value, `mesh_tasks/${traceId}`),
      revision: entry.revision,
    };
  }

  /** Stores the first record of a task; false when the task has a record already. */
  async create(record: TaskStatusRecord): Promise<boolean> {
    try {
      await this.kv.create(record.trace_id, encodeJson(TaskStatusRecord.parse(record)));
      return true;
    } catch (error) {
      if ((await this.get(record.trace_id)) !== undefined) return false;
      throw error;
    }
  }

  /**
   * Applies `change` to the current record (or to `initial` when there is none) and stores the result
   * if nobody wrote in between; retries otherwise. `change` returning undefined leaves it unchanged.
   */
  async update(
    traceId: string,
    change: (current: TaskStatusRecord | undefined) => TaskStatusRecord | undefined,
  ): Promise<TaskStatusRecord | undefined> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const current = await this.read(traceId);
      const next = change(current?.record);
      if (next === undefined) return current?.record;
      const payload = encodeJson(TaskStatusRecord.parse(next));
      try {
        if (current) await this.kv.update(traceId, payload, current.revision);
        else await this.kv.create(traceId, payload);
        return next;
      } catch {
        // Somebody else wrote first: read again and reapply.
      }
    }
    throw new Error(`task status of ${traceId} kept changing under ${MAX_CAS_ATTEMPTS} updates`);
  }
}
