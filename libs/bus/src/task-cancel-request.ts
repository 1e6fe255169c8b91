/**
 * Requesting a task's cancel, as every service that may do so does it: the status record gets
 * `cancel_requested_at` (what counts: a task that has not started never runs, and a running one hears the
 * write), then a CancelSignal goes out on `mesh.control.cancel.<account>.<trace_id>` (what makes it quick).
 * Used by the gateway's cancel API and by an executor cancelling the sub-tasks of a task that ended.
 * Cancelling twice is harmless and sends the signal again; a task that has already ended gets no signal.
 */
import { CancelSignal, cancelSubject, isFinalTaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { encodeJson } from './json.js';
import type { TaskStatusStore } from './stores/task-status-store.js';

export interface TaskCancelRequest {
  accountId: string;
  traceId: string;
  reason?: string;
  /** The time written as `cancel_requested_at` (now by default). */
  requestedAt?: Date;
  /** Headers of the broadcast (the caller's trace context). */
  headers?: MsgHdrs;
}

/**
 * The task's status record after the request (undefined: no such task). A final record is returned as it
 * is, without a signal: the task is over. Status store errors are thrown.
 */
export async function requestTaskCancel(
  nc: Pick<NatsConnection, 'publish'>,
  statuses: Pick<TaskStatusStore, 'update'>,
  request: TaskCancelRequest,
): Promise<TaskStatusRecord | undefined> {
  const { accountId, traceId } = request;
  const requestedAt = (request.requestedAt ?? new Date()).toISOString();
  const record = await statuses.update(accountId, traceId, (current) =>
    current === undefined || isFinalTaskStatus(current.status) || current.cancel_requested_at !== undefined
      ? undefined
      : { ...current, cancel_requested_at: requestedAt, updated_at: requestedAt },
  );
  if (record === undefined || isFinalTaskStatus(record.status)) return record;
  const signal = CancelSignal.parse({
    account_id: accountId,
    trace_id: traceId,
    requested_at: record.cancel_requested_at ?? requestedAt,
    ...(request.reason === undefined ? {} : { reason: request.reason }),
  });
  nc.publish(
    cancelSubject(accountId, traceId),
    encodeJson(signal),
    request.headers === undefined ? undefined : { headers: request.headers },
  );
  return record;
}
