// Human approval of tool calls at run time: the approvals a parked task waits on (KV `mesh_parked_tasks`) and
// the HTTP bodies of `POST /v1/tasks/{id}/approvals/{call_id}` and `GET /v1/tasks/{id}/approvals`. The rule
// language that decides which calls need approval is in tools/approval-policy.ts.
import { z } from 'zod';
import { IsoDateTime } from './ids.js';
import { AccountId } from './names.js';
import { AssembledTask } from './task.js';
import { TraceId } from './trace-id.js';

/**
 * Header of a parked task queued again (its value: the attempt that parked it). Its delivery count starts
 * at 1 like a new task's, but it has events to resume from: the executor reads them instead of starting
 * fresh.
 */
export const RESUMED_PARK_HEADER = 'Agentmesh-Resumed-Park';

export const ApprovalState = {
  PENDING: 'pending',
  APPROVED: 'approved',
  DENIED: 'denied',
  /** Its timeout passed before anyone decided; the task ends with APPROVAL_TIMEOUT. */
  EXPIRED: 'expired',
  /** The task was cancelled while it waited. */
  CANCELLED: 'cancelled',
} as const;
export type ApprovalState = (typeof ApprovalState)[keyof typeof ApprovalState];

/** One tool call a parked task waits on. Arguments are not kept here: they are in the call's event. */
export const ApprovalRecord = z.object({
  call_id: z.string().min(1),
  tool: z.string().min(1),
  reason: z.string(),
  /** Seq of the `approval_requested` event. */
  seq: z.int().min(1),
  requested_at: IsoDateTime,
  expires_at: IsoDateTime,
  state: z.enum(ApprovalState),
  comment: z.string().max(2000).optional(),
  decided_at: IsoDateTime.optional(),
});
export type ApprovalRecord = z.infer<typeof ApprovalRecord>;

/**
 * KV `mesh_parked_tasks`, key `<account>.<trace_id>`: a task waiting for people, held by no executor. The
 * task is kept as it was delivered (its vault sealed and bound to it), to be queued again on `subject` once
 * every approval is decided, one expires, or the task is cancelled.
 */
export const ParkedTask = z.object({
  trace_id: TraceId,
  account_id: AccountId,
  /** The assembled-task subject it came on (routed subjects name native classes). */
  subject: z.string().min(1),
  task: AssembledTask,
  parked_at: IsoDateTime,
  /** The attempt that parked it. */
  attempt: z.int().min(1),
  approvals: z.array(ApprovalRecord).min(1),
  /** Set when the task was queued again; a parked task is queued once per park. */
  resumed_at: IsoDateTime.optional(),
});
export type ParkedTask = z.infer<typeof ParkedTask>;

/** `POST /v1/tasks/{id}/approvals/{call_id}`. */
export const ApprovalDecisionRequest = z.strictObject({
  approve: z.boolean(),
  /** Goes to the model with a denial (and is kept with an approval). */
  comment: z.string().max(2000).optional(),
});
export type ApprovalDecisionRequest = z.infer<typeof ApprovalDecisionRequest>;

/** The answer to a decision, and `GET /v1/tasks/{id}/approvals`. */
export const TaskApprovals = z.object({
  trace_id: TraceId,
  approvals: z.array(ApprovalRecord),
  /** True once every approval is decided and the task is queued to go on. */
  resumed: z.boolean(),
});
export type TaskApprovals = z.infer<typeof TaskApprovals>;
