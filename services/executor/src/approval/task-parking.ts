/**
 * Parks a task whose model asked for calls that need a person's approval: the attempt's events are stored,
 * the task is kept in KV `mesh_parked_tasks` as it was delivered (with its sealed vault), and only then is
 * `approval_requested` written for each held call, so a client that sees the event can decide. The status
 * becomes `waiting_approval` (compare-and-set: a cancel requested meanwhile wins and cancels the
 * approvals), and the runner acks the delivery: the task holds no executor slot while it waits. A decision
 * taken before the park finished is not lost: the task is queued again here if it is ready already
 * (`resumeIfReady` is idempotent).
 */
import { cancelApprovals, type ParkedTaskStore, type TaskStatusStore } from '@agentmesh/bus';
import {
  ApprovalState,
  MAX_APPROVAL_TIMEOUT_MS,
  type ApprovalRecord,
  type AssembledTask,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { HeldCall } from '../agent-loop.js';
import { statusConflict } from '../attempt-status.js';
import type { TaskEventSink } from '../task-event-sink.js';

export interface ApprovalSettings {
  /** How long an approval waits when its policy does not say (APPROVAL_TIMEOUT_MS). */
  defaultTimeoutMs: number;
  /** How long the task's events are kept: an approval must be decided before they go. */
  eventRetentionMs: number;
}

export interface ParkingContext {
  store: ParkedTaskStore;
  statuses: TaskStatusStore;
  js: JetStreamClient;
  settings: ApprovalSettings;
  now: () => number;
  /** The status record this attempt writes, built as the runner builds its others. */
  statusRecord: (
    current: TaskStatusRecord | undefined,
    change: Partial<TaskStatusRecord>,
  ) => TaskStatusRecord;
}

export interface ParkRequest {
  task: AssembledTask;
  /** The assembled-task subject the task was delivered on: it is queued there again. */
  subject: string;
  attempt: number;
  held: readonly HeldCall[];
  sink: TaskEventSink;
}

/** Whether the task waits now, or a cancel requested while it parked won (the approvals are cancelled). */
export type ParkOutcome = { waiting: true } | { waiting: false; cancelled: true };

export async function parkTask(context: ParkingContext, request: ParkRequest): Promise<ParkOutcome> {
  const { store, statuses, js, now } = context;
  const { task, subject, attempt, held, sink } = request;
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  // Every event before the requests is stored, so theirs are the next sequence numbers.
  await sink.stored();
  const at = now();
  const approvals: ApprovalRecord[] = held.map((call, index) => ({
    call_id: call.callId,
    tool: call.tool,
    reason: call.need.reason,
    seq: sink.seq + index + 1,
    requested_at: new Date(at).toISOString(),
    expires_at: new Date(at + approvalTimeout(call.need.timeoutMs, context.settings)).toISOString(),
    state: ApprovalState.PENDING,
  }));
  await store.park({
    trace_id: traceId,
    account_id: accountId,
    subject,
    task,
    parked_at: new Date(at).toISOString(),
    attempt,
    approvals,
  });
  const requests = held.map((call, index) => ({
    type: 'approval_requested' as const,
    data: {
      call_id: call.callId,
      tool: call.tool,
      arguments: call.arguments,
      reason: call.need.reason,
      expires_at: approvals[index]?.expires_at ?? new Date(at).toISOString(),
    },
  }));
  const last = requests.pop();
  for (const event of requests) sink.emit(event);
  if (last !== undefined) await sink.emitDurably(last);

  // A later attempt (the task resumed already by a fast approver) has the status; so has a cancel, and
  // an ended task keeps its final one (attempt-status.ts).
  const status = await statuses.updateFrom(accountId, traceId, (current) =>
    current?.cancel_requested_at !== undefined || statusConflict(current, attempt) !== undefined
      ? undefined
      : context.statusRecord(current, { status: 'waiting_approval', error: undefined }),
  );
  const cancelled = status?.record.cancel_requested_at !== undefined;
  if (cancelled) await store.update(accountId, traceId, (parked) => cancelApprovals(parked, new Date(now())));
  await store.resumeIfReady(js, accountId, traceId, { now: new Date(now()) });
  return cancelled ? { waiting: false, cancelled: true } : { waiting: true };
}

/** The policy's timeout, or the executor's default, cut below the events' retention. */
export function approvalTimeout(policyMs: number | undefined, settings: ApprovalSettings): number {
  // A margin of a tenth: the resumed attempt reads the events after the approval expired.
  const cap = Math.min(MAX_APPROVAL_TIMEOUT_MS, Math.floor(settings.eventRetentionMs * 0.9));
  return Math.max(1, Math.min(policyMs ?? settings.defaultTimeoutMs, cap));
}
