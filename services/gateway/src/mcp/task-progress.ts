/**
 * A task's events as MCP progress: each event the caller would want to watch (a tool call starting or
 * answering, a piece of the answer) becomes one `notifications/progress` message, numbered by the
 * event's `seq`, so the progress counter strictly increases as MCP requires and says how far the task
 * is. Reasoning deltas and the terminal event are not progress: the terminal event is the call's result.
 * A resumed attempt (`attempt_started`) is progress too: answer pieces already reported may be void, and
 * the new attempt reports them again; the call's result is `done`'s message, never the pieces.
 * A tool call waiting for approval is progress that names what to do, so the person behind the MCP client
 * knows the call waits for them (the call itself stays open until the task goes on and ends).
 */
import { EventType, type TaskEvent } from '@agentmesh/protocol';

/** Longest message of one progress notification; an answer piece beyond it is cut (the result has it whole). */
export const MAX_PROGRESS_MESSAGE_CHARS = 500;

export function progressMessage(event: TaskEvent): string | undefined {
  switch (event.type) {
    case EventType.TOOL_START:
      return `calling ${event.data.tool}`;
    case EventType.TOOL_RESULT:
      return event.data.ok
        ? `${event.data.tool} answered (${event.data.duration_ms} ms)`
        : `${event.data.tool} failed: ${event.data.error.code}`;
    case EventType.TOOL_PROGRESS:
      return cut(`${event.data.tool}: ${event.data.message ?? event.data.progress}`);
    case EventType.MESSAGE_CHUNK:
      return cut(event.data.delta);
    case EventType.APPROVAL_REQUESTED:
      return cut(
        `${event.data.tool} waits for approval (${event.data.reason}): approve or deny call ${event.data.call_id} with POST /v1/tasks/${event.trace_id}/approvals/${event.data.call_id} or agentmesh approve|deny ${event.trace_id} ${event.data.call_id} before ${event.data.expires_at}`,
      );
    case EventType.APPROVAL_DECIDED:
      return `${event.data.tool} ${event.data.approved ? 'approved' : 'denied'}`;
    case EventType.ATTEMPT_STARTED:
      return `attempt ${event.attempt} resumed the task; the answer restarts after event ${event.data.drop_text_after_seq}`;
    default:
      return undefined;
  }
}

function cut(text: string): string {
  return text.length <= MAX_PROGRESS_MESSAGE_CHARS
    ? text
    : `${text.slice(0, MAX_PROGRESS_MESSAGE_CHARS - 1)}…`;
}
