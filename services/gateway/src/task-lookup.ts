/**
 * Finding a caller's own task: trace ids from paths (32 hex or a UUID, normalised) and the task's
 * status record, which also says whose task it is. Another account's task is reported exactly as a
 * missing one, so ids of other tenants' tasks cannot be probed.
 */
import { TraceIdInput, type TaskStatusRecord } from '@agentmesh/protocol';
import type { TaskStatusStore } from '@agentmesh/bus';
import type { Rejection } from './errors.js';
import { InvalidRequest, NotFound, ServiceUnavailable } from './errors.js';

export function parseTraceIdParam(value: string): string | Rejection {
  const parsed = TraceIdInput.safeParse(value);
  return parsed.success ? parsed.data : InvalidRequest.fromZod(parsed.error, 'trace_id');
}

export async function ownedTaskStatus(
  statuses: TaskStatusStore,
  traceId: string,
  accountId: string,
): Promise<TaskStatusRecord | Rejection> {
  let record: TaskStatusRecord | undefined;
  try {
    record = await statuses.get(traceId);
  } catch (error) {
    return new ServiceUnavailable('task status is unavailable right now; retry', { cause: error });
  }
  return record?.account_id === accountId ? record : new NotFound(`no task ${traceId}`);
}
