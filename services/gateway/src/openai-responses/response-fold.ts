/**
 * A task's events folded into an OpenAI Responses API response: the semantic stream events of a streamed
 * response (each with its `sequence_number`) and the `response` object itself. The fold is a pure function
 * of the task's event log, so replaying the log gives the same events with the same sequence numbers:
 * resuming a dropped stream (`GET /v1/responses/{id}?stream=true&starting_after=N`) replays the log and
 * sends only the events after N, and a retrieve answers the object a stream would have ended with.
 *
 * Mapping:
 * - `response.created` (status `queued`) opens every stream; the task's first event brings
 *   `response.in_progress`.
 * - Answer text (`message_chunk`) is a `message` item with one `output_text` part; text written before a
 *   tool call is its own item with `phase: "commentary"`, the answer's last item has `phase:
 *   "final_answer"` and the text of `done` (when the streamed text is a prefix of it, the rest is one more
 *   delta; otherwise `output_text.done` says the final text).
 * - The model's reasoning (`tool_thinking`) is a `reasoning` item with a `reasoning_text` part
 *   (`response.reasoning_text.delta` / `.done`).
 * - A tool call runs inside the mesh, so it is never a `function_call` a client would try to run: it is an
 *   `agentmesh_tool_call` item (name, arguments and output as JSON text), added at `tool_start` and done at
 *   `tool_result`. An approval waiting is an `agentmesh_approval_request` item, done when decided.
 * - A resumed attempt (`attempt_started`) voids text written after its `drop_text_after_seq`: an item
 *   holding such text ends `incomplete` and is left out of the final `output` (whose items keep the
 *   `output_index` they were streamed with, so a voided one leaves a gap), and an `agentmesh.attempt_started`
 *   event says so.
 * - `done` ends with `response.completed`, or `response.incomplete` when the answer was cut or filtered;
 *   `error` with `response.failed` (status `cancelled` when the task was cancelled), the error code the
 *   mesh's in lower case.
 */
import {
  ErrorCode,
  TaskTranscript,
  type DoneEvent,
  type ErrorEvent,
  type TaskEvent,
  type TaskStatusRecord,
  type TokenUsage,
} from '@agentmesh/protocol';
import {
  DoorTaskState,
  doorStateAfter,
  doorStateOfStatus,
  isEndedDoorState,
  taskOutcomeOf,
} from '../door-mapping/index.js';
import { responseIdOf, type ResponseTextFormat } from './response-request.js';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** What a response says of itself besides its output: from the request, or the task's record on a retrieve. */
export interface ResponseIdentity {
  traceId: string;
  /** Unix seconds. */
  createdAt: number;
  model: string;
  /** Null where not known (a retrieve: the request's own fields are not kept). */
  background: boolean | null;
  instructions: string | null;
  metadata: Record<string, string> | null;
  textFormat: ResponseTextFormat;
  previousResponseId: string | null;
  /** The thread the response runs in: its `conversation`. */
  threadId: string | undefined;
}

interface OutputText {
  type: 'output_text';
  text: string;
  annotations: [];
  logprobs: [];
}

interface MessageItem {
  id: string;
  type: 'message';
  role: 'assistant';
  status: 'in_progress' | 'completed' | 'incomplete';
  phase?: 'commentary' | 'final_answer';
  content: OutputText[];
}

interface ReasoningItem {
  id: string;
  type: 'reasoning';
  status: 'in_progress' | 'completed' | 'incomplete';
  summary: [];
  content: { type: 'reasoning_text'; text: string }[];
}

interface ToolCallItem {
  id: string;
  type: 'agentmesh_tool_call';
  call_id: string;
  name: string;
  /** JSON text, as a `function_call`'s arguments are. */
  arguments: string;
  status: 'in_progress' | 'completed' | 'failed';
  /** JSON text of the tool's result (or its error); null until it ended. */
  output: string | null;
}

interface ApprovalItem {
  id: string;
  type: 'agentmesh_approval_request';
  call_id: string;
  name: string;
  arguments: string;
  reason: string;
  expires_at: string;
  status: 'in_progress' | 'completed';
  approved: boolean | null;
}

export type ResponseOutputItem = MessageItem | ReasoningItem | ToolCallItem | ApprovalItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  background: boolean | null;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  instructions: string | null;
  metadata: Record<string, string> | null;
  model: string;
  output: ResponseOutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  conversation: { id: string } | null;
  temperature: null;
  top_p: null;
  tool_choice: 'auto';
  tools: [];
  text: { format: ResponseTextFormat };
  usage: ResponseUsage | null;
  /** The mesh's own view: the task behind the response, its door state and what it waits for. */
  agentmesh: { trace_id: string; thread_id: string | null; state: DoorTaskState };
}

export type ResponseStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;

interface Slot {
  item: ResponseOutputItem;
  /** Seq of the first text event the item holds (message and reasoning items). */
  firstTextSeq?: number;
  voided: boolean;
}

function statusOfEndedState(state: DoorTaskState): ResponseStatus {
  if (state === DoorTaskState.COMPLETED) return 'completed';
  return state === DoorTaskState.CANCELED ? 'cancelled' : 'failed';
}

export function responseUsage(usage: TokenUsage): ResponseUsage {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

const json = (value: unknown): string => JSON.stringify(value ?? null);

export class ResponseFold {
  private readonly slots: Slot[] = [];
  private readonly transcript = new TaskTranscript();
  private openMessage: number | undefined;
  private openReasoning: number | undefined;
  private readonly toolCalls = new Map<string, number>();
  private readonly approvals = new Map<string, number>();
  private sequence = 0;
  private lastSeq = 0;
  private started = false;
  private state: DoorTaskState = DoorTaskState.SUBMITTED;
  private status: ResponseStatus = 'queued';
  private usage: ResponseUsage | null = null;
  private error: ResponseObject['error'] = null;
  private incomplete: ResponseObject['incomplete_details'] = null;
  private completedAt: number | null = null;

  constructor(private readonly identity: ResponseIdentity) {}

  /** The sequence number the next stream event gets. */
  get nextSequence(): number {
    return this.sequence;
  }

  /** Whether the task's terminal event was folded in. */
  get ended(): boolean {
    return this.completedAt !== null;
  }

  /** The stream's first event. */
  open(): ResponseStreamEvent[] {
    return [this.emit('response.created', { response: this.response() })];
  }

  /** The stream events one task event becomes; none for an event already folded (a replayed seq). */
  add(event: TaskEvent): ResponseStreamEvent[] {
    if (event.seq <= this.lastSeq || this.ended) return [];
    this.lastSeq = event.seq;
    const voided = this.transcript.add(event);
    this.state = doorStateAfter(this.state, event);
    const out: ResponseStreamEvent[] = [];
    if (!this.started) {
      this.started = true;
      this.status = 'in_progress';
      out.push(this.emit('response.in_progress', { response: this.response() }));
    }
    switch (event.type) {
      case 'message_chunk':
        if (event.data.delta === '') break;
        out.push(...this.closeReasoning('completed'));
        out.push(...this.messageDelta(event.seq, event.data.delta));
        break;
      case 'tool_thinking':
        if (event.data.delta === '') break;
        out.push(...this.reasoningDelta(event.seq, event.data.delta));
        break;
      case 'tool_start': {
        out.push(...this.closeReasoning('completed'), ...this.closeMessage('completed', 'commentary'));
        if (this.toolCalls.has(event.data.call_id)) break;
        const item: ToolCallItem = {
          id: this.itemId('amtc'),
          type: 'agentmesh_tool_call',
          call_id: event.data.call_id,
          name: event.data.tool,
          arguments: json(event.data.arguments),
          status: 'in_progress',
          output: null,
        };
        this.toolCalls.set(event.data.call_id, this.slots.length);
        out.push(this.addItem(item));
        break;
      }
      case 'tool_result': {
        const index = this.toolCalls.get(event.data.call_id);
        const slot = index === undefined ? undefined : this.slots[index];
        if (slot?.item.type !== 'agentmesh_tool_call' || slot.item.status !== 'in_progress') break;
        slot.item.status = event.data.ok ? 'completed' : 'failed';
        slot.item.output = json(event.data.ok ? event.data.result : event.data.error);
        out.push(this.itemDone(index!));
        break;
      }
      case 'approval_requested': {
        out.push(...this.closeReasoning('completed'), ...this.closeMessage('completed', 'commentary'));
        const known = this.approvals.get(event.data.call_id);
        if (known !== undefined && this.slots[known]?.item.status === 'in_progress') break;
        const item: ApprovalItem = {
          id: this.itemId('amap'),
          type: 'agentmesh_approval_request',
          call_id: event.data.call_id,
          name: event.data.tool,
          arguments: json(event.data.arguments),
          reason: event.data.reason,
          expires_at: event.data.expires_at,
          status: 'in_progress',
          approved: null,
        };
        this.approvals.set(event.data.call_id, this.slots.length);
        out.push(this.addItem(item));
        break;
      }
      case 'approval_decided': {
        const index = this.approvals.get(event.data.call_id);
        const slot = index === undefined ? undefined : this.slots[index];
        if (slot?.item.type !== 'agentmesh_approval_request' || slot.item.status !== 'in_progress') break;
        slot.item.status = 'completed';
        slot.item.approved = event.data.approved;
        out.push(this.itemDone(index!));
        break;
      }
      case 'attempt_started':
        out.push(...this.voidText(event.data.drop_text_after_seq, voided));
        out.push(
          this.emit('agentmesh.attempt_started', {
            attempt: event.attempt,
            drop_text_after_seq: event.data.drop_text_after_seq,
          }),
        );
        break;
      case 'done':
        out.push(...this.finish(event));
        break;
      case 'error':
        out.push(...this.fail(event));
        break;
      default:
        break;
    }
    return out;
  }

  /** The response as the events so far make it. */
  response(): ResponseObject {
    const { identity } = this;
    return {
      id: responseIdOf(identity.traceId),
      object: 'response',
      created_at: identity.createdAt,
      completed_at: this.completedAt,
      status: this.status,
      background: identity.background,
      error: this.error,
      incomplete_details: this.incomplete,
      instructions: identity.instructions,
      metadata: identity.metadata,
      model: identity.model,
      output: this.slots.filter((slot) => !slot.voided).map((slot) => structuredClone(slot.item)),
      parallel_tool_calls: false,
      previous_response_id: identity.previousResponseId,
      conversation: identity.threadId === undefined ? null : { id: identity.threadId },
      temperature: null,
      top_p: null,
      tool_choice: 'auto',
      tools: [],
      text: { format: identity.textFormat },
      usage: this.usage,
      agentmesh: { trace_id: identity.traceId, thread_id: identity.threadId ?? null, state: this.state },
    };
  }

  /**
   * The response, its status settled by the task's status record where the log has not said it yet: a
   * task running with no event written is `in_progress`, and one the record ended without a terminal
   * event (refused by its thread, say) ends as the record says.
   */
  settledBy(record: Pick<TaskStatusRecord, 'status' | 'error'>): ResponseObject {
    const response = this.response();
    if (this.ended) return response;
    const state = doorStateOfStatus(record);
    response.agentmesh.state = this.started ? this.state : state;
    if (isEndedDoorState(state)) {
      response.status = statusOfEndedState(state);
      if (record.error)
        response.error = { code: record.error.code.toLowerCase(), message: record.error.message };
    } else if (state !== DoorTaskState.SUBMITTED) {
      response.status = 'in_progress';
    }
    return response;
  }

  private emit(type: string, fields: Record<string, unknown>): ResponseStreamEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  private itemId(prefix: string): string {
    return `${prefix}_${this.identity.traceId}_${this.slots.length}`;
  }

  private addItem(item: ResponseOutputItem, firstTextSeq?: number): ResponseStreamEvent {
    this.slots.push({ item, voided: false, ...(firstTextSeq === undefined ? {} : { firstTextSeq }) });
    return this.emit('response.output_item.added', {
      output_index: this.slots.length - 1,
      item: structuredClone(item),
    });
  }

  private itemDone(index: number): ResponseStreamEvent {
    return this.emit('response.output_item.done', {
      output_index: index,
      item: structuredClone(this.slots[index]!.item),
    });
  }

  private messageDelta(seq: number, delta: string): ResponseStreamEvent[] {
    const out: ResponseStreamEvent[] = [];
    if (this.openMessage === undefined) {
      const item: MessageItem = {
        id: this.itemId('msg'),
        type: 'message',
        role: 'assistant',
        status: 'in_progress',
        content: [],
      };
      this.openMessage = this.slots.length;
      out.push(this.addItem(item, seq));
      const part: OutputText = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      item.content.push(part);
      out.push(
        this.emit('response.content_part.added', {
          item_id: item.id,
          output_index: this.openMessage,
          content_index: 0,
          part: structuredClone(part),
        }),
      );
    }
    const item = this.slots[this.openMessage]!.item as MessageItem;
    item.content[0]!.text += delta;
    out.push(
      this.emit('response.output_text.delta', {
        item_id: item.id,
        output_index: this.openMessage,
        content_index: 0,
        delta,
        logprobs: [],
      }),
    );
    return out;
  }

  private closeMessage(
    status: MessageItem['status'],
    phase: MessageItem['phase'],
    finalText?: string,
  ): ResponseStreamEvent[] {
    const index = this.openMessage;
    if (index === undefined) return [];
    this.openMessage = undefined;
    const item = this.slots[index]!.item as MessageItem;
    const part = item.content[0]!;
    const out: ResponseStreamEvent[] = [];
    if (finalText !== undefined && finalText !== part.text) {
      if (finalText.startsWith(part.text)) {
        out.push(
          this.emit('response.output_text.delta', {
            item_id: item.id,
            output_index: index,
            content_index: 0,
            delta: finalText.slice(part.text.length),
            logprobs: [],
          }),
        );
      }
      part.text = finalText;
    }
    item.status = status;
    if (phase !== undefined) item.phase = phase;
    out.push(
      this.emit('response.output_text.done', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        text: part.text,
        logprobs: [],
      }),
      this.emit('response.content_part.done', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: structuredClone(part),
      }),
      this.itemDone(index),
    );
    return out;
  }

  private reasoningDelta(seq: number, delta: string): ResponseStreamEvent[] {
    const out: ResponseStreamEvent[] = [];
    if (this.openReasoning === undefined) {
      const item: ReasoningItem = {
        id: this.itemId('rs'),
        type: 'reasoning',
        status: 'in_progress',
        summary: [],
        content: [],
      };
      this.openReasoning = this.slots.length;
      out.push(this.addItem(item, seq));
      const part = { type: 'reasoning_text' as const, text: '' };
      item.content.push(part);
      out.push(
        this.emit('response.content_part.added', {
          item_id: item.id,
          output_index: this.openReasoning,
          content_index: 0,
          part: structuredClone(part),
        }),
      );
    }
    const item = this.slots[this.openReasoning]!.item as ReasoningItem;
    item.content[0]!.text += delta;
    out.push(
      this.emit('response.reasoning_text.delta', {
        item_id: item.id,
        output_index: this.openReasoning,
        content_index: 0,
        delta,
      }),
    );
    return out;
  }

  private closeReasoning(status: ReasoningItem['status']): ResponseStreamEvent[] {
    const index = this.openReasoning;
    if (index === undefined) return [];
    this.openReasoning = undefined;
    const item = this.slots[index]!.item as ReasoningItem;
    const part = item.content[0]!;
    item.status = status;
    return [
      this.emit('response.reasoning_text.done', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        text: part.text,
      }),
      this.emit('response.content_part.done', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: structuredClone(part),
      }),
      this.itemDone(index),
    ];
  }

  /** Ends the items whose text the new attempt voids (open ones included) and leaves them out of the output. */
  private voidText(afterSeq: number, voided: ReturnType<TaskTranscript['add']>): ResponseStreamEvent[] {
    if (!voided?.answer && !voided?.reasoning) return [];
    const out: ResponseStreamEvent[] = [];
    const hit = (index: number | undefined): boolean =>
      index !== undefined && (this.slots[index]!.firstTextSeq ?? 0) > afterSeq;
    const openMessage = this.openMessage;
    const openReasoning = this.openReasoning;
    // An open item's text may have begun before the cut; its text after the cut is void all the same.
    if (openMessage !== undefined && voided.answer) {
      out.push(...this.closeMessage('incomplete', undefined));
      this.slots[openMessage]!.voided = true;
    }
    if (openReasoning !== undefined && voided.reasoning) {
      out.push(...this.closeReasoning('incomplete'));
      this.slots[openReasoning]!.voided = true;
    }
    for (const [index, slot] of this.slots.entries()) {
      if (slot.voided || slot.firstTextSeq === undefined || !hit(index)) continue;
      slot.voided = true;
      slot.item.status = 'incomplete';
    }
    return out;
  }

  private finish(done: DoneEvent): ResponseStreamEvent[] {
    const outcome = taskOutcomeOf(done);
    const answer = outcome.ok ? outcome.answer : { text: done.data.message };
    const out: ResponseStreamEvent[] = [...this.closeReasoning('completed')];
    if (this.openMessage === undefined && answer.text !== '') {
      out.push(...this.messageDelta(done.seq, answer.text));
    }
    const cut = 'incomplete' in answer && answer.incomplete !== undefined ? answer.incomplete : undefined;
    out.push(...this.closeMessage(cut ? 'incomplete' : 'completed', 'final_answer', answer.text));
    this.usage = responseUsage(done.data.usage);
    this.completedAt = Math.floor(Date.parse(done.ts) / 1000);
    if (cut !== undefined) {
      this.status = 'incomplete';
      this.incomplete = { reason: cut === 'length' ? 'max_output_tokens' : 'content_filter' };
      out.push(this.emit('response.incomplete', { response: this.response() }));
    } else {
      this.status = 'completed';
      out.push(this.emit('response.completed', { response: this.response() }));
    }
    return out;
  }

  private fail(error: ErrorEvent): ResponseStreamEvent[] {
    const out = [...this.closeReasoning('incomplete'), ...this.closeMessage('incomplete', undefined)];
    this.completedAt = Math.floor(Date.parse(error.ts) / 1000);
    this.status = error.data.code === ErrorCode.CANCELLED ? 'cancelled' : 'failed';
    this.error = { code: error.data.code.toLowerCase(), message: error.data.message };
    out.push(this.emit('response.failed', { response: this.response() }));
    return out;
  }
}
