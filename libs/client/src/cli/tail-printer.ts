/**
 * How `agentmesh tail` shows an account's events: their tasks interleave, so each event is one line on
 * stdout naming its task (`<trace_id> <seq> <type> <summary>`), never a bare stream of answer text;
 * `--json` prints each event as one JSON line instead.
 */
import type { TaskEvent } from '@agentmesh/protocol';
import { progressOf, type TextSink } from './event-printer.js';

const SUMMARY_LENGTH = 160;

export function printTailEvent(event: TaskEvent, json: boolean, stdout: TextSink): void {
  stdout.write(
    json ? `${JSON.stringify(event)}\n` : `${event.trace_id} ${event.seq} ${event.type} ${summary(event)}\n`,
  );
}

function summary(event: TaskEvent): string {
  switch (event.type) {
    case 'message_chunk':
      return clip(JSON.stringify(event.data.delta));
    case 'tool_thinking':
      return '';
    case 'tool_call_delta':
      return clip(`${event.data.tool} ${event.data.call_id} ${JSON.stringify(event.data.delta)}`);
    case 'tool_start':
      return clip(`${event.data.tool} ${JSON.stringify(event.data.arguments)}`);
    case 'tool_result':
      return event.data.ok
        ? `${event.data.tool} ok (${event.data.duration_ms} ms)`
        : `${event.data.tool} failed ${event.data.error.code} (${event.data.duration_ms} ms)`;
    case 'tool_progress':
      return clip(`${event.data.tool} ${progressOf(event.data)}`);
    case 'attempt_started':
      return `attempt ${event.attempt} resumes; text after seq ${event.data.drop_text_after_seq} is void`;
    case 'approval_requested':
      return clip(`${event.data.tool} ${event.data.call_id} waits for approval: ${event.data.reason}`);
    case 'approval_decided':
      return `${event.data.tool} ${event.data.call_id} ${event.data.approved ? 'approved' : 'denied'}`;
    case 'subtask_started':
      return `${event.data.tool} sub-task ${event.data.subtask_trace_id}`;
    case 'subtask_finished':
      return `${event.data.tool} sub-task ${event.data.subtask_trace_id} ${event.data.status}`;
    case 'step_finished':
      return `step ${event.data.step}: ${event.data.usage.total_tokens} tokens (task ${event.data.total_usage.total_tokens})${event.data.model === undefined ? '' : ` by ${event.data.model}`}`;
    case 'model_waiting':
      return `${event.data.model} waits: its key's ${event.data.limit} (${event.data.value}) is full`;
    case 'done':
      return clip(JSON.stringify(event.data.message));
    case 'error':
      return clip(`${event.data.code}: ${event.data.message}`);
  }
}

const clip = (text: string): string =>
  text.length > SUMMARY_LENGTH ? `${text.slice(0, SUMMARY_LENGTH)}…` : text;
