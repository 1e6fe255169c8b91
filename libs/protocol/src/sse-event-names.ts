// The `event:` names a task's events carry over SSE (`GET /v1/tasks/{id}/events`), for browsers'
// `EventSource.addEventListener(name, …)`. Each is the event's type, except the mesh's `error`: an
// EventSource fires its own `error` event when the connection fails, so a listener for the mesh's
// error under that name would also hear every dropped connection (with no data). On the wire it is
// `task_error`; the JSON in `data:` is unchanged (its `type` stays `error`).
import { EventType } from './events.js';

export const SseEventName = {
  [EventType.TOOL_THINKING]: 'tool_thinking',
  [EventType.TOOL_CALL_DELTA]: 'tool_call_delta',
  [EventType.TOOL_START]: 'tool_start',
  [EventType.TOOL_RESULT]: 'tool_result',
  [EventType.TOOL_PROGRESS]: 'tool_progress',
  [EventType.MESSAGE_CHUNK]: 'message_chunk',
  [EventType.ATTEMPT_STARTED]: 'attempt_started',
  [EventType.APPROVAL_REQUESTED]: 'approval_requested',
  [EventType.APPROVAL_DECIDED]: 'approval_decided',
  [EventType.SUBTASK_STARTED]: 'subtask_started',
  [EventType.SUBTASK_FINISHED]: 'subtask_finished',
  [EventType.STEP_FINISHED]: 'step_finished',
  [EventType.MODEL_WAITING]: 'model_waiting',
  [EventType.DONE]: 'done',
  [EventType.ERROR]: 'task_error',
} as const satisfies Record<EventType, string>;
export type SseEventName = (typeof SseEventName)[EventType];

/** The SSE `event:` name of an event type. */
export function sseEventName(type: EventType): SseEventName {
  return SseEventName[type];
}

/**
 * Whether an SSE `event:` name fits an event of `type`: its wire name, or the type itself, which
 * gateways before the `task_error` name sent for errors.
 */
export function isSseEventNameOf(name: string, type: EventType): boolean {
  return name === SseEventName[type] || name === type;
}
