// Task status as kept in KV `mesh_tasks` (key: trace_id) and returned by `GET /v1/tasks/{id}`.
import { z } from 'zod';
import { AgentDigest, AgentVersionNumber, RunToolDigests } from './agent-version-number.js';
import { ExecutorInstance } from './control.js';
import { ErrorCode, ErrorCodeSchema } from './errors.js';
import { TokenUsage, type TerminalEvent } from './events.js';
import { IsoDateTime, WorkflowId } from './ids.js';
import { AccountId } from './names.js';
import { ThreadId } from './thread-id.js';
import { TraceId } from './trace-id.js';

export const TaskStatus = {
  QUEUED: 'queued',
  RUNNING: 'running',
  /** Parked until a person decides on a tool call; no executor holds it (see ParkedTask). */
  WAITING_APPROVAL: 'waiting_approval',
  DONE: 'done',
  ERROR: 'error',
  CANCELLED: 'cancelled',
} as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

export const TaskStatusSchema = z.enum(TaskStatus);

export const FINAL_TASK_STATUSES: readonly TaskStatus[] = [
  TaskStatus.DONE,
  TaskStatus.ERROR,
  TaskStatus.CANCELLED,
];

export function isFinalTaskStatus(status: TaskStatus): boolean {
  return FINAL_TASK_STATUSES.includes(status);
}

/** How much of a task's message its status record keeps as `preview`. */
export const TASK_PREVIEW_LENGTH = 120;

export const TaskStatusRecord = z.object({
  trace_id: TraceId,
  account_id: AccountId,
  workflow_id: WorkflowId,
  status: TaskStatusSchema,
  /** Delivery attempt that last touched the task; 0 while queued. */
  attempt: z.int().nonnegative(),
  submitted_at: IsoDateTime.optional(),
  updated_at: IsoDateTime,
  /** Set by a cancel request; a task that has not started yet never runs. */
  cancel_requested_at: IsoDateTime.optional(),
  /** Seq of the last event published, to resume a stream from. */
  last_seq: z.int().nonnegative().optional(),
  /**
   * The executor instance (a random token per executor process) that wrote this attempt's record: while
   * the task is `running`, a delivery of it elsewhere asks that instance whether its attempt still lives.
   */
  executor_instance: ExecutorInstance.optional(),
  /** Set on a sub-task: the task whose agent-tool call submitted it. */
  parent_trace_id: TraceId.optional(),
  /** The agent version the task runs (written once it is assembled; see TaskMeta.agent_version). */
  agent_version: AgentVersionNumber.optional(),
  agent_digest: AgentDigest.optional(),
  /** The digests of the tools the task ran, by bound name (see TaskMeta.tool_digests). */
  tool_digests: RunToolDigests.optional(),
  /** Set on a task that runs in a thread. */
  thread_id: ThreadId.optional(),
  error: z
    .object({ code: ErrorCodeSchema, message: z.string(), retryable: z.boolean().optional() })
    .optional(),
  /**
   * The start of the task's last user message (at most {@link TASK_PREVIEW_LENGTH} characters), written at
   * submit with credential-shaped tokens masked: what a task list shows and searches. Never the whole input.
   */
  preview: z.string().max(TASK_PREVIEW_LENGTH).optional(),
  /** Written with `done`: the task's run time and every model call's usage (and cost, when priced). */
  duration_ms: z.int().nonnegative().optional(),
  usage: TokenUsage.optional(),
  cost_usd: z.number().nonnegative().optional(),
});
export type TaskStatusRecord = z.infer<typeof TaskStatusRecord>;

/** What a task's status record says once its terminal event is stored. */
export type FinalStatusFields = Pick<
  TaskStatusRecord,
  'status' | 'error' | 'duration_ms' | 'usage' | 'cost_usd' | 'last_seq'
>;

/**
 * The status a stored terminal event settles: the event is the truth, the record follows it (written by
 * the attempt right after the event, or read through by whoever sees the record lag behind it).
 */
export function finalStatusFields(terminal: TerminalEvent): FinalStatusFields {
  if (terminal.type === 'error') {
    const { code, message, retryable } = terminal.data;
    return {
      status: code === ErrorCode.CANCELLED ? TaskStatus.CANCELLED : TaskStatus.ERROR,
      error: { code, message, retryable },
      last_seq: terminal.seq,
    };
  }
  const { duration_ms, usage, cost_usd } = terminal.data;
  return { status: TaskStatus.DONE, error: undefined, duration_ms, usage, cost_usd, last_seq: terminal.seq };
}
