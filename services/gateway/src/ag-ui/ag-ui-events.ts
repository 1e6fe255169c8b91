/**
 * A mesh task's events as AG-UI events (`@ag-ui/core` 1.0), one task event at a time, keeping what AG-UI
 * needs open and closed in order (its verifier refuses a stream that ends a run with a message, tool call,
 * step or reasoning still open):
 *
 * - the task is a run: RUN_STARTED first, RUN_FINISHED (result: the answer) on `done`, RUN_FINISHED with a
 *   `cancelled` outcome on a CANCELLED error, RUN_ERROR (code and message) on any other error;
 * - a model turn is a step (`step-<n>`): STEP_STARTED at its first event, STEP_FINISHED at `step_finished`;
 * - `message_chunk` → TEXT_MESSAGE_START/CONTENT/END; `tool_thinking` → REASONING_START,
 *   REASONING_MESSAGE_START/CONTENT/END, REASONING_END;
 * - a tool call: TOOL_CALL_START at its first `tool_call_delta` (or its `tool_start` when none streamed),
 *   TOOL_CALL_ARGS per delta (the whole arguments as one when none streamed), TOOL_CALL_END at
 *   `tool_start`, TOOL_CALL_RESULT (JSON text of the result or error) at `tool_result`; a call announced
 *   again (a `tool_start` run again after a resume or an approval) adds nothing;
 * - an approval: the run finishes with an `interrupt` outcome listing every approval waiting (interrupt id
 *   `<trace_id>:<call_id>`, `toolCallId`, the reason, `expiresAt`); the next event after it (the decision,
 *   once the task resumes) opens a new run (`<trace_id>-<seq>`) on the same stream;
 * - what AG-UI has no event for is a CUSTOM event named `agentmesh.<type>` with the mesh event's data:
 *   `attempt_started` (a resumed attempt: text shown after `drop_text_after_seq` is void), `tool_progress`,
 *   `approval_decided`, `subtask_started`, `subtask_finished`, `model_waiting`.
 *
 * Every AG-UI event carries `metadata.agentmesh.seq`, the mesh event it came from. Pure: no I/O, no clock.
 */
import { EventType as AgUi, type BaseEvent, type Interrupt } from '@ag-ui/core';
import { ErrorCode, EventType, type TaskEvent } from '@agentmesh/protocol';
import { PendingApprovals, taskAnswerOf } from '../door-mapping/index.js';

export interface AgUiRunIdentity {
  traceId: string;
  /** AG-UI's threadId: the mesh thread, or what the client named (or the trace id). */
  threadId: string;
  /** The first run's id (a POSTed input's runId; the trace id otherwise). */
  runId: string;
}

/** The event's own fields beside `type`; each AG-UI event type narrows them (checked by the tests). */
type AgUiEvent = BaseEvent & Record<string, unknown>;

/** The mesh event types turned into CUSTOM events. */
const CUSTOM_TYPES: ReadonlySet<string> = new Set([
  EventType.ATTEMPT_STARTED,
  EventType.TOOL_PROGRESS,
  EventType.APPROVAL_DECIDED,
  EventType.SUBTASK_STARTED,
  EventType.SUBTASK_FINISHED,
  EventType.MODEL_WAITING,
]);

/** The AG-UI interrupt id of a call waiting for approval. */
export function interruptId(traceId: string, callId: string): string {
  return `${traceId}:${callId}`;
}

export class AgUiEventMapper {
  #runOpen = false;
  #runs = 0;
  #ended = false;
  #step: string | undefined;
  #steps = 0;
  #text: string | undefined;
  #reasoning: string | undefined;
  /** Tool calls started (TOOL_CALL_START sent) and not ended, by call id. */
  readonly #openCalls = new Set<string>();
  /** Tool calls whose tool_start was mapped (TOOL_CALL_END sent). */
  readonly #endedCalls = new Set<string>();
  readonly #approvals = new PendingApprovals();
  #seq = 0;

  constructor(private readonly identity: AgUiRunIdentity) {}

  /** True once the task's terminal event was mapped: nothing follows. */
  get ended(): boolean {
    return this.#ended;
  }

  /** The AG-UI events of one task event, in order. */
  map(event: TaskEvent): AgUiEvent[] {
    if (this.#ended) return [];
    this.#seq = event.seq;
    const out: AgUiEvent[] = [];
    this.#approvals.add(event);
    if (!this.#runOpen) out.push(this.#runStarted(event.seq));
    switch (event.type) {
      case EventType.MESSAGE_CHUNK:
        this.#endReasoning(out);
        this.#startStep(out);
        if (this.#text === undefined) {
          this.#text = `${this.identity.traceId}-text-${event.seq}`;
          out.push(this.#event(AgUi.TEXT_MESSAGE_START, { messageId: this.#text, role: 'assistant' }));
        }
        if (event.data.delta !== '')
          out.push(
            this.#event(AgUi.TEXT_MESSAGE_CONTENT, { messageId: this.#text, delta: event.data.delta }),
          );
        return out;
      case EventType.TOOL_THINKING:
        this.#endText(out);
        this.#startStep(out);
        if (this.#reasoning === undefined) {
          this.#reasoning = `${this.identity.traceId}-reasoning-${event.seq}`;
          out.push(this.#event(AgUi.REASONING_START, { messageId: this.#reasoning }));
          out.push(
            this.#event(AgUi.REASONING_MESSAGE_START, { messageId: this.#reasoning, role: 'reasoning' }),
          );
        }
        if (event.data.delta !== '')
          out.push(
            this.#event(AgUi.REASONING_MESSAGE_CONTENT, {
              messageId: this.#reasoning,
              delta: event.data.delta,
            }),
          );
        return out;
      case EventType.TOOL_CALL_DELTA:
        this.#endText(out);
        this.#endReasoning(out);
        this.#startStep(out);
        this.#startCall(out, event.data.call_id, event.data.tool);
        if (event.data.delta !== '')
          out.push(
            this.#event(AgUi.TOOL_CALL_ARGS, { toolCallId: event.data.call_id, delta: event.data.delta }),
          );
        return out;
      case EventType.STEP_FINISHED:
        this.#endText(out);
        this.#endReasoning(out);
        this.#startStep(out);
        out.push(this.#event(AgUi.STEP_FINISHED, { stepName: this.#step }));
        this.#step = undefined;
        return out;
      case EventType.TOOL_START: {
        this.#endText(out);
        this.#endReasoning(out);
        const { call_id: callId, tool } = event.data;
        // A call announced again (run again after a resume or an approval): the client has it already.
        if (this.#endedCalls.has(callId)) return out;
        this.#endedCalls.add(callId);
        if (!this.#openCalls.has(callId)) {
          // Nothing streamed (or a re-run of a call): its arguments whole, as one piece.
          this.#startCall(out, callId, tool);
          const args = event.data.arguments;
          out.push(
            this.#event(AgUi.TOOL_CALL_ARGS, {
              toolCallId: callId,
              delta: typeof args === 'string' ? args : JSON.stringify(args),
            }),
          );
        }
        this.#openCalls.delete(callId);
        out.push(this.#event(AgUi.TOOL_CALL_END, { toolCallId: callId }));
        return out;
      }
      case EventType.TOOL_RESULT: {
        this.#endOpen(out);
        const data = event.data;
        out.push(
          this.#event(AgUi.TOOL_CALL_RESULT, {
            messageId: `${this.identity.traceId}-result-${event.seq}`,
            toolCallId: data.call_id,
            role: 'tool',
            content: JSON.stringify(data.ok ? data.result : { error: data.error }) ?? 'null',
          }),
        );
        return out;
      }
      case EventType.APPROVAL_REQUESTED:
        this.#endOpen(out);
        out.push(this.#runFinished({ outcome: { type: 'interrupt', interrupts: this.#interrupts() } }));
        return out;
      case EventType.DONE: {
        this.#endOpen(out);
        const answer = taskAnswerOf(event);
        out.push(this.#runFinished({ result: answer, outcome: { type: 'success' } }));
        this.#ended = true;
        return out;
      }
      case EventType.ERROR:
        this.#endOpen(out);
        if (event.data.code === ErrorCode.CANCELLED)
          out.push(this.#runFinished({ outcome: { type: 'cancelled' } }));
        else {
          out.push(this.#event(AgUi.RUN_ERROR, { message: event.data.message, code: event.data.code }));
          this.#runOpen = false;
        }
        this.#ended = true;
        return out;
      default:
        if (CUSTOM_TYPES.has(event.type)) {
          // A resumed attempt voids what streamed after drop_text_after_seq: what is open ends here.
          if (event.type === EventType.ATTEMPT_STARTED) this.#endOpen(out);
          out.push(this.#event(AgUi.CUSTOM, { name: `agentmesh.${event.type}`, value: event.data }));
        }
        return out;
    }
  }

  #interrupts(): Interrupt[] {
    return this.#approvals.waiting.map((approval) => ({
      id: interruptId(this.identity.traceId, approval.call_id),
      reason: 'tool_approval',
      message: `${approval.tool} waits for approval: ${approval.reason}. Decide with POST /v1/tasks/${this.identity.traceId}/approvals/${approval.call_id}.`,
      toolCallId: approval.call_id,
      expiresAt: approval.expires_at,
      metadata: {
        agentmesh: { trace_id: this.identity.traceId, tool: approval.tool, arguments: approval.arguments },
      },
    }));
  }

  #runStarted(seq: number): AgUiEvent {
    this.#runOpen = true;
    this.#runs += 1;
    return this.#event(AgUi.RUN_STARTED, {
      threadId: this.identity.threadId,
      runId: this.#runId(seq),
    });
  }

  #runFinished(fields: Record<string, unknown>): AgUiEvent {
    this.#runOpen = false;
    return this.#event(AgUi.RUN_FINISHED, {
      threadId: this.identity.threadId,
      runId: this.#currentRunId,
      ...fields,
    });
  }

  #currentRunId = '';

  #runId(seq: number): string {
    this.#currentRunId = this.#runs === 1 ? this.identity.runId : `${this.identity.traceId}-${seq}`;
    return this.#currentRunId;
  }

  #startStep(out: AgUiEvent[]): void {
    if (this.#step !== undefined) return;
    this.#steps += 1;
    this.#step = `step-${this.#steps}`;
    out.push(this.#event(AgUi.STEP_STARTED, { stepName: this.#step }));
  }

  #startCall(out: AgUiEvent[], callId: string, tool: string): void {
    if (this.#openCalls.has(callId)) return;
    this.#openCalls.add(callId);
    out.push(this.#event(AgUi.TOOL_CALL_START, { toolCallId: callId, toolCallName: tool }));
  }

  #endText(out: AgUiEvent[]): void {
    if (this.#text === undefined) return;
    out.push(this.#event(AgUi.TEXT_MESSAGE_END, { messageId: this.#text }));
    this.#text = undefined;
  }

  #endReasoning(out: AgUiEvent[]): void {
    if (this.#reasoning === undefined) return;
    out.push(this.#event(AgUi.REASONING_MESSAGE_END, { messageId: this.#reasoning }));
    out.push(this.#event(AgUi.REASONING_END, { messageId: this.#reasoning }));
    this.#reasoning = undefined;
  }

  /** Ends whatever is open: text, reasoning, calls whose arguments streamed without a tool_start, the step. */
  #endOpen(out: AgUiEvent[]): void {
    this.#endText(out);
    this.#endReasoning(out);
    for (const callId of this.#openCalls) out.push(this.#event(AgUi.TOOL_CALL_END, { toolCallId: callId }));
    this.#openCalls.clear();
    if (this.#step !== undefined) {
      out.push(this.#event(AgUi.STEP_FINISHED, { stepName: this.#step }));
      this.#step = undefined;
    }
  }

  #event(type: AgUi, fields: Record<string, unknown>): AgUiEvent {
    return { type, ...fields, metadata: { agentmesh: { seq: this.#seq } } };
  }
}
