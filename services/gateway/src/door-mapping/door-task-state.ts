/**
 * The state of a mesh task as every protocol door reports it. A2A's TaskState, the Responses API's
 * `status` and AG-UI's run lifecycle are all this one mapping, read either from the task's status record
 * (a door answering "how is task X") or from its events as they stream (a door following it live):
 *
 * - queued → submitted; running → working;
 * - an approval waiting (`waiting_approval`, or an `approval_requested` not yet decided) → input required;
 * - an error whose code is CREDENTIALS_MISSING → auth required (a person must store a credential, then
 *   submit again); CANCELLED → canceled; any other error → failed; done → completed.
 */
import {
  ErrorCode,
  EventType,
  TaskStatus,
  type ErrorCode as ErrorCodeValue,
  type TaskEvent,
  type TaskStatusRecord,
} from '@agentmesh/protocol';

export const DoorTaskState = {
  SUBMITTED: 'submitted',
  WORKING: 'working',
  INPUT_REQUIRED: 'input_required',
  AUTH_REQUIRED: 'auth_required',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELED: 'canceled',
} as const;
export type DoorTaskState = (typeof DoorTaskState)[keyof typeof DoorTaskState];

const ENDED: readonly DoorTaskState[] = [
  DoorTaskState.COMPLETED,
  DoorTaskState.FAILED,
  DoorTaskState.CANCELED,
  DoorTaskState.AUTH_REQUIRED,
];

/** Whether a task in this state will write no more events. */
export function isEndedDoorState(state: DoorTaskState): boolean {
  return ENDED.includes(state);
}

/** The state an error code ends a task in. */
export function doorStateOfError(code: ErrorCodeValue): DoorTaskState {
  if (code === ErrorCode.CANCELLED) return DoorTaskState.CANCELED;
  if (code === ErrorCode.CREDENTIALS_MISSING) return DoorTaskState.AUTH_REQUIRED;
  return DoorTaskState.FAILED;
}

/** The state a status record says the task is in. */
export function doorStateOfStatus(record: Pick<TaskStatusRecord, 'status' | 'error'>): DoorTaskState {
  switch (record.status) {
    case TaskStatus.QUEUED:
      return DoorTaskState.SUBMITTED;
    case TaskStatus.RUNNING:
      return DoorTaskState.WORKING;
    case TaskStatus.WAITING_APPROVAL:
      return DoorTaskState.INPUT_REQUIRED;
    case TaskStatus.DONE:
      return DoorTaskState.COMPLETED;
    case TaskStatus.CANCELLED:
      return DoorTaskState.CANCELED;
    case TaskStatus.ERROR:
      return record.error ? doorStateOfError(record.error.code) : DoorTaskState.FAILED;
  }
}

/**
 * The state after `event`, given the state before it; unchanged for events that do not move it (text,
 * tool calls, usage). An `attempt_started` or a decided approval means the task runs again.
 */
export function doorStateAfter(state: DoorTaskState, event: TaskEvent): DoorTaskState {
  switch (event.type) {
    case EventType.APPROVAL_REQUESTED:
      return DoorTaskState.INPUT_REQUIRED;
    case EventType.APPROVAL_DECIDED:
    case EventType.ATTEMPT_STARTED:
      return DoorTaskState.WORKING;
    case EventType.DONE:
      return DoorTaskState.COMPLETED;
    case EventType.ERROR:
      return doorStateOfError(event.data.code);
    default:
      return state === DoorTaskState.SUBMITTED ? DoorTaskState.WORKING : state;
  }
}
