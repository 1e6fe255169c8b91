// The event stream of a task (`mesh.events.<account>.<trace_id>`, SSE `/v1/tasks/{id}/events`), with seed 002's
// event names. Every event has the same envelope; `seq` starts at 1 and strictly increases per task (the SSE
// `id:`), and `attempt` is the JetStream delivery that produced it. Each attempt ends with exactly one terminal
// event, `done` or `error`.
import { z } from 'zod';
import { AgentDigest, AgentVersionNumber } from './agent-version-number.js';
import { ErrorCodeSchema } from './errors.js';
import { IsoDateTime } from './ids.js';
import { TraceId } from './trace-id.js';

export const EventType = {
  TOOL_THINKING: 'tool_thinking',
  /**
   * A piece of a tool call's arguments (JSON text) while the model streams them, before the call's
   * `tool_start` (which still carries the parsed arguments whole).
   */
  TOOL_CALL_DELTA: 'tool_call_delta',
  TOOL_START: 'tool_start',
  TOOL_RESULT: 'tool_result',
  /** A running tool's progress (MCP `notifications/progress`), between its tool_start and tool_result. */
  TOOL_PROGRESS: 'tool_progress',
  MESSAGE_CHUNK: 'message_chunk',
  /**
   * A redelivered task taking over from an earlier attempt that died. It says what of the earlier
   * attempts' events stands; text after `drop_text_after_seq` is streamed again by this attempt.
   */
  ATTEMPT_STARTED: 'attempt_started',
  /** A tool call waits for a person's approval; the task parks (status `waiting_approval`) until decided. */
  APPROVAL_REQUESTED: 'approval_requested',
  /** The decision on an approval, written by the attempt that resumes the parked task. */
  APPROVAL_DECIDED: 'approval_decided',
  /** A call of an agent tool submitted a sub-task (followable on its own subject and SSE). */
  SUBTASK_STARTED: 'subtask_started',
  /** That sub-task ended; its answer (or error) is the call's `tool_result`. */
  SUBTASK_FINISHED: 'subtask_finished',
  /** A model call ended: its token usage and cost, and the task's running totals across attempts. */
  STEP_FINISHED: 'step_finished',
  /**
   * A model call waits for room under its key's shared limits (concurrency, requests or tokens per
   * minute) before it is sent; written once per wait.
   */
  MODEL_WAITING: 'model_waiting',
  DONE: 'done',
  ERROR: 'error',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

export const TERMINAL_EVENT_TYPES = [EventType.DONE, EventType.ERROR] as const;
export type TerminalEventType = (typeof TERMINAL_EVENT_TYPES)[number];

const Count = z.int().nonnegative();

export const ToolThinkingData = z.object({
  /** A piece of the model's reasoning (`reasoning_content`). */
  delta: z.string(),
});

/**
 * Appended in order, a call's deltas are the raw argument text the model sent (scrubbed of the task's
 * secrets), which `tool_start` then carries parsed. Voided by `attempt_started` like `message_chunk`.
 */
export const ToolCallDeltaData = z.object({
  /** The model's tool call id (the same as the call's `tool_start`). */
  call_id: z.string().min(1),
  tool: z.string().min(1),
  delta: z.string(),
});

export const ToolStartData = z.object({
  /** The model's tool call id. */
  call_id: z.string().min(1),
  tool: z.string().min(1),
  /** Parsed JSON arguments, or the raw text when the model's arguments did not parse. */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
});

export const ToolError = z.object({
  code: ErrorCodeSchema,
  message: z.string(),
  detail: z.unknown().optional(),
});
export type ToolError = z.infer<typeof ToolError>;

export const ToolResultData = z.discriminatedUnion('ok', [
  z.object({
    call_id: z.string().min(1),
    tool: z.string().min(1),
    ok: z.literal(true),
    result: z.unknown(),
    duration_ms: Count,
  }),
  z.object({
    call_id: z.string().min(1),
    tool: z.string().min(1),
    ok: z.literal(false),
    error: ToolError,
    duration_ms: Count,
  }),
]);

/**
 * Its own type rather than `tool_thinking`: tool_thinking carries the model's reasoning text, while progress
 * belongs to one tool call and has numbers a client can draw (MCP's `progress`/`total`).
 */
export const ToolProgressData = z.object({
  call_id: z.string().min(1),
  tool: z.string().min(1),
  /** Increases with each notification of a call; in the tool's own unit. */
  progress: z.number(),
  total: z.number().optional(),
  message: z.string().optional(),
  /**
   * The task the call runs on another system (an A2A agent's task id): an attempt that takes the task over
   * follows that task again instead of starting another.
   */
  remote_task_id: z.string().min(1).max(256).optional(),
});

export const MessageChunkData = z.object({ delta: z.string() });

/**
 * Written first by an attempt that resumes a task an earlier attempt began (JetStream redelivered it after
 * that attempt's executor died or lost its event stream). The new attempt rebuilds the conversation from
 * the task's events: model turns already answered are not asked again, and a tool call whose
 * `tool_result` was written is not run again.
 *
 * What a client does with it: drop the text (`message_chunk`, `tool_thinking`, `tool_call_delta`) of events whose `seq` is
 * above `drop_text_after_seq` and that an earlier attempt wrote; the new attempt streams that part of the
 * answer again. Then appended `message_chunk`s equal the final answer, as in a task that never failed.
 */
export const AttemptStartedData = z.object({
  /** Events up to this seq stand; earlier attempts' text after it is void. 0: all of it is void. */
  drop_text_after_seq: Count,
  /** Model turns answered by earlier attempts and taken over (not asked again). */
  resumed_steps: Count,
  /** Tool calls whose `tool_result` earlier attempts wrote (not run again). */
  resumed_tool_results: Count,
  /**
   * Tool calls an earlier attempt started (`tool_start` written) but left without a result: run again
   * with the same `call_id`, so with the same idempotency key (`Idempotency-Key: <trace_id>:<call_id>`).
   */
  rerun_call_ids: z.array(z.string().min(1)),
});

export const TokenUsage = z.object({
  /** Every input token, cached ones included. */
  prompt_tokens: Count,
  completion_tokens: Count,
  total_tokens: Count,
  /** Of `prompt_tokens`, those read from the provider's prompt cache (billed cheaper); absent: none reported. */
  cache_read_tokens: Count.optional(),
  /** Of `prompt_tokens`, those written to the provider's prompt cache (Anthropic bills them dearer). */
  cache_write_tokens: Count.optional(),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

/** US dollars, from the executor's price table; absent where the model's prices are not known. */
const CostUsd = z.number().nonnegative();

export const ApprovalRequestedData = z.object({
  call_id: z.string().min(1),
  tool: z.string().min(1),
  /** As in the call's `tool_start` (scrubbed of the task's secrets). */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
  /** Why approval is needed: the policy's reason, or one naming the rule that matched. */
  reason: z.string(),
  /** When the task ends with APPROVAL_TIMEOUT unless decided. */
  expires_at: IsoDateTime,
});

export const ApprovalDecidedData = z.object({
  call_id: z.string().min(1),
  tool: z.string().min(1),
  approved: z.boolean(),
  comment: z.string().optional(),
  decided_at: IsoDateTime,
});

export const SubtaskStartedData = z.object({
  call_id: z.string().min(1),
  tool: z.string().min(1),
  /** The sub-task's own id: follow it on `mesh.events.<account>.<id>` or `/v1/tasks/{id}/events`. */
  subtask_trace_id: TraceId,
  workflow_id: z.string().min(1),
});

export const SubtaskFinishedData = z.object({
  call_id: z.string().min(1),
  tool: z.string().min(1),
  subtask_trace_id: TraceId,
  status: z.enum(['done', 'error', 'cancelled']),
  usage: TokenUsage.optional(),
  cost_usd: CostUsd.optional(),
  error: z.object({ code: ErrorCodeSchema, message: z.string() }).optional(),
});

/**
 * Why the model stopped, as its server said: `stop`, `tool_calls`, `length` (cut at the token limit),
 * `content_filter` (withheld by the provider's filter), or another server's word.
 */
const FinishReason = z.string().min(1);

export const StepFinishedData = z.object({
  /** The model round trip that ended (1-based, across attempts). */
  step: z.int().min(1),
  /** Absent when the server gave none. */
  finish_reason: FinishReason.optional(),
  /** When `usage_reported` is false, the executor's estimate (characters / 4 of the request and the answer). */
  usage: TokenUsage,
  /** False when the server sent no usage for the step and `usage` is an estimate; absent means reported. */
  usage_reported: z.literal(false).optional(),
  cost_usd: CostUsd.optional(),
  /** Every model call of the task so far, earlier attempts' included. */
  total_usage: TokenUsage,
  total_cost_usd: CostUsd.optional(),
  /** The model that answered (the agent's first, or the fallback that took over). */
  model: z.string().min(1).optional(),
  /** Its place in the agent's model list (0: the first); absent with a single model. */
  model_index: z.int().nonnegative().optional(),
});

export const ModelWaitingData = z.object({
  /** The model whose key has no room. */
  model: z.string().min(1),
  /** Which limit is full. */
  limit: z.enum(['max_concurrent', 'rpm', 'tpm']),
  /** The limit's value. */
  value: z.int().positive(),
});

export const DoneData = z.object({
  /** The final assistant answer. */
  message: z.string(),
  /** Model round trips taken. */
  steps: Count,
  /** Every model call of the task, earlier attempts' included. */
  usage: TokenUsage,
  /** False when some step's usage was not sent by the server and is counted as an estimate. */
  usage_reported: z.literal(false).optional(),
  /** Cost of that usage in US dollars, when the executor knows the model's prices. */
  cost_usd: CostUsd.optional(),
  duration_ms: Count,
  /** The last model turn's finish reason, when the server gave one. */
  finish_reason: FinishReason.optional(),
  /**
   * True when `message` is not the whole answer: the last turn was cut at the token limit
   * (`finish_reason` `length`) or withheld by the provider's filter (`content_filter`).
   */
  truncated: z.literal(true).optional(),
  /** The answer parsed, when the task has an output schema (it validated against it). */
  output: z.unknown().optional(),
});

export const ErrorData = z.object({
  code: ErrorCodeSchema,
  message: z.string(),
  retryable: z.boolean(),
  detail: z.unknown().optional(),
});

/**
 * The agent version a task runs, on the first event its executor writes (seq 1, whatever its type): a
 * task's log names the definition it ran, however the agent changed after.
 */
export const EventAgentVersion = z.object({
  workflow_id: z.string().min(1),
  version: AgentVersionNumber,
  digest: AgentDigest,
});
export type EventAgentVersion = z.infer<typeof EventAgentVersion>;

const envelope = {
  trace_id: TraceId,
  seq: z.int().min(1),
  ts: IsoDateTime,
  attempt: z.int().min(1),
  /** Only on the first event of a task that ran a stored agent (see EventAgentVersion). */
  agent: EventAgentVersion.optional(),
};

export const ToolThinkingEvent = z.object({
  ...envelope,
  type: z.literal(EventType.TOOL_THINKING),
  data: ToolThinkingData,
});
export const ToolCallDeltaEvent = z.object({
  ...envelope,
  type: z.literal(EventType.TOOL_CALL_DELTA),
  data: ToolCallDeltaData,
});
export const ToolStartEvent = z.object({
  ...envelope,
  type: z.literal(EventType.TOOL_START),
  data: ToolStartData,
});
export const ToolResultEvent = z.object({
  ...envelope,
  type: z.literal(EventType.TOOL_RESULT),
  data: ToolResultData,
});
export const ToolProgressEvent = z.object({
  ...envelope,
  type: z.literal(EventType.TOOL_PROGRESS),
  data: ToolProgressData,
});
export const MessageChunkEvent = z.object({
  ...envelope,
  type: z.literal(EventType.MESSAGE_CHUNK),
  data: MessageChunkData,
});
export const AttemptStartedEvent = z.object({
  ...envelope,
  type: z.literal(EventType.ATTEMPT_STARTED),
  data: AttemptStartedData,
});
export const ApprovalRequestedEvent = z.object({
  ...envelope,
  type: z.literal(EventType.APPROVAL_REQUESTED),
  data: ApprovalRequestedData,
});
export const ApprovalDecidedEvent = z.object({
  ...envelope,
  type: z.literal(EventType.APPROVAL_DECIDED),
  data: ApprovalDecidedData,
});
export const SubtaskStartedEvent = z.object({
  ...envelope,
  type: z.literal(EventType.SUBTASK_STARTED),
  data: SubtaskStartedData,
});
export const SubtaskFinishedEvent = z.object({
  ...envelope,
  type: z.literal(EventType.SUBTASK_FINISHED),
  data: SubtaskFinishedData,
});
export const StepFinishedEvent = z.object({
  ...envelope,
  type: z.literal(EventType.STEP_FINISHED),
  data: StepFinishedData,
});
export const ModelWaitingEvent = z.object({
  ...envelope,
  type: z.literal(EventType.MODEL_WAITING),
  data: ModelWaitingData,
});
export const DoneEvent = z.object({ ...envelope, type: z.literal(EventType.DONE), data: DoneData });
export const ErrorEvent = z.object({ ...envelope, type: z.literal(EventType.ERROR), data: ErrorData });

export const TaskEvent = z.discriminatedUnion('type', [
  ToolThinkingEvent,
  ToolCallDeltaEvent,
  ToolStartEvent,
  ToolResultEvent,
  ToolProgressEvent,
  MessageChunkEvent,
  AttemptStartedEvent,
  ApprovalRequestedEvent,
  ApprovalDecidedEvent,
  SubtaskStartedEvent,
  SubtaskFinishedEvent,
  StepFinishedEvent,
  ModelWaitingEvent,
  DoneEvent,
  ErrorEvent,
]);
export type TaskEvent = z.infer<typeof TaskEvent>;
export type ToolThinkingEvent = z.infer<typeof ToolThinkingEvent>;
export type ToolCallDeltaEvent = z.infer<typeof ToolCallDeltaEvent>;
export type ToolStartEvent = z.infer<typeof ToolStartEvent>;
export type ToolResultEvent = z.infer<typeof ToolResultEvent>;
export type ToolProgressEvent = z.infer<typeof ToolProgressEvent>;
export type MessageChunkEvent = z.infer<typeof MessageChunkEvent>;
export type AttemptStartedEvent = z.infer<typeof AttemptStartedEvent>;
export type ApprovalRequestedEvent = z.infer<typeof ApprovalRequestedEvent>;
export type ApprovalDecidedEvent = z.infer<typeof ApprovalDecidedEvent>;
export type SubtaskStartedEvent = z.infer<typeof SubtaskStartedEvent>;
export type SubtaskFinishedEvent = z.infer<typeof SubtaskFinishedEvent>;
export type StepFinishedEvent = z.infer<typeof StepFinishedEvent>;
export type ModelWaitingEvent = z.infer<typeof ModelWaitingEvent>;
export type DoneEvent = z.infer<typeof DoneEvent>;
export type ErrorEvent = z.infer<typeof ErrorEvent>;
export type TerminalEvent = DoneEvent | ErrorEvent;

/** The `data` of an event of the given type. */
export type EventData<T extends EventType> = Extract<TaskEvent, { type: T }>['data'];

export function isTerminalEventType(type: string): type is TerminalEventType {
  return (TERMINAL_EVENT_TYPES as readonly string[]).includes(type);
}

export function isTerminalEvent(event: TaskEvent): event is TerminalEvent {
  return isTerminalEventType(event.type);
}
