/**
 * Waits for a sub-task's end without polling: its status record (KV `mesh_tasks`) is final once the
 * sub-task's terminal event is stored. A core subscription to the record's writes
 * (`$KV.mesh_tasks.<account>.<trace_id>`) is taken first, then the record is read once, so a write is
 * either read or heard; after a reconnect (the subscription heard nothing meanwhile) it is read again. The
 * same three-part pattern the cancel listener uses for the tasks this executor runs.
 *
 * Every record seen must belong to the caller (`belongs`): a task of the same account could sit at the
 * sub-task's id, submitted by somebody else, and its answer must never pass for the sub-agent's.
 */
import { decodeJson, type TaskStatusStore } from '@agentmesh/bus';
import { Buckets, ErrorCode, isFinalTaskStatus, TaskStatusRecord, taskKey } from '@agentmesh/protocol';
import type { NatsConnection } from '@nats-io/transport-node';

/** Set on a KV delete or purge (whose body is empty). */
const KV_OPERATION_HEADER = 'KV-Operation';

export interface SubtaskEndWatchOptions {
  nc: NatsConnection;
  statuses: Pick<TaskStatusStore, 'get'>;
  accountId: string;
  traceId: string;
  /** Aborting it stops the wait: the promise rejects with the signal's reason. */
  signal: AbortSignal;
  /** Whether a record is the caller's sub-task; one that is not ends the wait ({@link ForeignSubtaskError}). */
  belongs: (record: TaskStatusRecord) => boolean;
}

/** The task at the sub-task's id is not the caller's sub-task (another parent, another agent). */
export class ForeignSubtaskError extends Error {
  override readonly name = 'ForeignSubtaskError';
  readonly code = ErrorCode.CONFLICT;
  readonly retryable = false;

  constructor(readonly traceId: string) {
    super(`task ${traceId} is not this call's sub-task`);
  }
}

/** The sub-task's final status record. */
export function awaitFinalStatus(options: SubtaskEndWatchOptions): Promise<TaskStatusRecord> {
  const { nc, statuses, accountId, traceId, signal, belongs } = options;
  const key = taskKey(accountId, traceId);
  return new Promise<TaskStatusRecord>((resolve, reject) => {
    let settled = false;
    const connection = nc.status();
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      subscription.unsubscribe();
      (connection as { stop?: () => void }).stop?.();
      signal.removeEventListener('abort', onAbort);
      outcome();
    };
    const consider = (record: TaskStatusRecord | undefined): void => {
      if (record === undefined) return;
      if (!belongs(record)) finish(() => reject(new ForeignSubtaskError(traceId)));
      else if (isFinalTaskStatus(record.status)) finish(() => resolve(record));
    };
    const read = (): void => {
      statuses.get(accountId, traceId).then(consider, (error: unknown) => finish(() => reject(error)));
    };
    const onAbort = (): void => finish(() => reject(signal.reason));
    const subscription = nc.subscribe(`$KV.${Buckets.TASKS}.${key}`, {
      callback: (error, msg) => {
        if (error || msg.headers?.get(KV_OPERATION_HEADER)) return;
        try {
          consider(decodeJson(TaskStatusRecord, msg.data, `${Buckets.TASKS}/${key}`));
        } catch {
          // An unreadable write: the next one, or the read, decides.
        }
      },
    });
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    void (async () => {
      for await (const status of connection) {
        if (settled) return;
        if (status.type === 'reconnect') {
          // Read once the server has the subscription again.
          await nc.flush().then(read, () => undefined);
        }
      }
    })().catch(() => undefined);
    nc.flush().then(read, (error: unknown) => finish(() => reject(error)));
  });
}
