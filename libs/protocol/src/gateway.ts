// Ingress bodies of the gateway: `POST /v1/tasks` (alias `/v1/run_workflow`) and the NATS request subject
// `mesh.gateway.submit` accept either a SubmitTaskRequest (the assembler looks up the agent) or, from trusted
// upstreams, a PreAssembledTaskRequest (seed 001 payload, RuoYi mode). Both answer SubmitTaskReply or ErrorBody.
import { z } from 'zod';
import { WorkflowRefText } from './agent-version.js';
import { ChatMessage } from './chat.js';
import { AccountId } from './names.js';
import { IdempotencyKey, IsoDateTime, UserIdInput, WorkflowId } from './ids.js';
import { ClearTaskPayload, OutputSchema, TaskLimits } from './task.js';
import { ErrorCodeSchema } from './errors.js';
import { TaskStatusRecord, TaskStatusSchema } from './task-status.js';
import { ThreadId, ThreadStrategy } from './thread-id.js';
import { TraceId, TraceIdInput } from './trace-id.js';
import { TaskWebhookRequest } from './webhooks.js';
import { JsonObject } from './tools/json-schema.js';

export const SubmitTaskRequest = z.object({
  /** The agent: `workflow_id`, or `workflow_id@version` to run that version (see WorkflowRef). */
  workflow_id: WorkflowRefText,
  user_id: UserIdInput,
  messages: z.array(ChatMessage).min(1),
  variables: JsonObject.optional(),
  /** Same key (per account) → same trace_id, and the task runs once. */
  idempotency_key: IdempotencyKey.optional(),
  /** Upstream's own id for the task, 32 hex or a UUID; generated when absent. */
  trace_id: TraceIdInput.optional(),
  deadline: IsoDateTime.optional(),
  /**
   * The task's token and cost budget (see TaskLimits); with the agent's own (AgentDefinition
   * max_total_tokens / max_cost_usd), the smaller applies. Other limits are the agent's.
   */
  limits: TaskLimits.pick({ max_total_tokens: true, max_cost_usd: true }).optional(),
  /**
   * Runs in this thread (created with `POST /v1/threads`): with its history before `messages`, and
   * `messages` plus the answer appended as the thread's next turn once the task is done.
   */
  thread_id: ThreadId.optional(),
  /** What happens when the thread already has an active run; the thread's own strategy when absent. */
  thread_strategy: ThreadStrategy.optional(),
  /** This task's events also go to this URL, on the origin of one of the account's webhook endpoints. */
  webhook: TaskWebhookRequest.optional(),
  /** The final answer's JSON Schema for this task; replaces the agent's `output_schema`. */
  output_schema: OutputSchema.optional(),
});
export type SubmitTaskRequest = z.infer<typeof SubmitTaskRequest>;
export type SubmitTaskRequestInput = z.input<typeof SubmitTaskRequest>;

/** Seed 001 payload with the vault in clear; the gateway seals it before anything reaches the bus. */
export const PreAssembledTaskRequest = ClearTaskPayload.extend({
  idempotency_key: IdempotencyKey.optional(),
});
export type PreAssembledTaskRequest = z.infer<typeof PreAssembledTaskRequest>;

/** Whether a submission body is the pre-assembled form (it carries seed 001's top-level sections). */
export function isPreAssembledSubmission(body: unknown): boolean {
  return typeof body === 'object' && body !== null && ('runtime_config' in body || 'task_meta' in body);
}

export const SubmitTaskReply = z.object({
  trace_id: TraceId,
  /** NATS subject of the task's events. */
  events_subject: z.string().min(1),
  /** Where to follow the events over SSE (absolute, or relative to the gateway). */
  events_url: z.string().min(1),
  /**
   * A short-lived token that opens this task's event stream, and nothing else, as `?token=` on
   * `events_url`: for browsers, whose EventSource cannot send an API key. Given to HTTP callers only.
   */
  stream_token: z.string().min(1).optional(),
});
export type SubmitTaskReply = z.infer<typeof SubmitTaskReply>;

/** `POST /v1/tasks/{id}/stream-token`: a token for `?token=` on the task's event stream. */
export const StreamTokenReply = z.object({
  trace_id: TraceId,
  stream_token: z.string().min(1),
  expires_at: IsoDateTime,
  /** The event stream, relative to the gateway, with the token in its query. */
  events_url: z.string().min(1),
});
export type StreamTokenReply = z.infer<typeof StreamTokenReply>;

/** The most tasks one `GET /v1/tasks` answers. */
export const MAX_TASK_LIST = 100;

/**
 * `GET /v1/tasks`' query: how many (`limit`) of the caller's account's most recently updated tasks that
 * match every filter given — `status`, `workflow_id`, the error's `error_code`, submitted (else updated) in
 * [`since`, `until`], and `q`, text found (case-insensitively) in the trace id, agent, message preview or
 * error message. Query strings carry strings only, so `limit` is coerced.
 */
export const TaskListQuery = z
  .strictObject({
    limit: z.coerce.number().int().min(1).max(MAX_TASK_LIST).default(20),
    status: TaskStatusSchema.optional(),
    workflow_id: WorkflowId.optional(),
    error_code: ErrorCodeSchema.optional(),
    since: IsoDateTime.optional(),
    until: IsoDateTime.optional(),
    q: z.string().trim().min(1).max(200).optional(),
  })
  .refine((query) => !query.since || !query.until || Date.parse(query.since) <= Date.parse(query.until), {
    message: 'since must not be after until',
    path: ['since'],
  });
export type TaskListQuery = z.infer<typeof TaskListQuery>;

/** Whether `record` passes every filter of `query` (the listing's predicate; `limit` is not a filter). */
export function taskMatches(record: TaskStatusRecord, query: Omit<TaskListQuery, 'limit'>): boolean {
  if (query.status !== undefined && record.status !== query.status) return false;
  if (query.workflow_id !== undefined && record.workflow_id !== query.workflow_id) return false;
  if (query.error_code !== undefined && record.error?.code !== query.error_code) return false;
  const at = Date.parse(record.submitted_at ?? record.updated_at);
  if (query.since !== undefined && at < Date.parse(query.since)) return false;
  if (query.until !== undefined && at > Date.parse(query.until)) return false;
  if (query.q !== undefined) {
    const needle = query.q.toLowerCase();
    const haystack = [record.trace_id, record.workflow_id, record.preview ?? '', record.error?.message ?? '']
      .join('\n')
      .toLowerCase();
    if (!haystack.includes(needle)) return false;
  }
  return true;
}

/** `GET /v1/tasks`: the caller's account's most recently updated tasks that match the query, newest first. */
export const TaskListReply = z.object({ tasks: z.array(TaskStatusRecord) });
export type TaskListReply = z.infer<typeof TaskListReply>;

/**
 * `GET /v1/caller`: what the presented key is — `admin` (acts for the account named in `x-account-id`;
 * `account_id` is that one when named), `api_key` (an account's key: `account_id` is its account), or
 * `trusted` (an internal caller without a key). The web console asks it to know whether to offer accounts.
 */
export const CallerReply = z.object({
  kind: z.enum(['admin', 'api_key', 'trusted']),
  account_id: AccountId.optional(),
});
export type CallerReply = z.infer<typeof CallerReply>;

/** `GET /v1/agents`: the agents a task of the caller's account may name (its own, then the shared ones). */
export const AgentListReply = z.object({
  agents: z.array(
    z.object({
      workflow_id: WorkflowId,
      name: z.string().optional(),
      description: z.string().optional(),
      /** The agent's current version (a task may pin another: `workflow_id@version`). */
      version: z.int().min(1).optional(),
    }),
  ),
});
export type AgentListReply = z.infer<typeof AgentListReply>;
