/**
 * What a resumed parked task does first: the approvals its events requested and do not show decided are
 * read from its parked entry. Still pending (a redelivery of the delivery that parked it, not the task
 * queued again): the task keeps waiting and this delivery is dropped. Decided: each decision is written
 * (`approval_decided`, and a denied call's failed `tool_result`, which carries the approver's comment), then
 * the entry is deleted (only the revision read: a newer park stays) and the task goes on. Expired: the task
 * ends with APPROVAL_TIMEOUT; cancelled: with CANCELLED.
 */
import {
  cancelApprovals,
  type ParkedTaskStore,
  type TaskEventWriter,
  type TaskStatusStore,
} from '@agentmesh/bus';
import {
  ApprovalState,
  ErrorCode,
  isFinalTaskStatus,
  type ApprovalRecord,
  type AssembledTask,
  type TaskEvent,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { LoopOutcome } from '../agent-loop.js';
import { deniedCallOutcome } from './denied-call.js';

export type ApprovalSettlement =
  /** Not every approval is decided: the task stays parked; the delivery is acked without running. */
  | { kind: 'waiting' }
  /** Decisions written (the events returned): resume the task from its log with them. */
  | { kind: 'decided'; events: TaskEvent[] }
  /** The task ends with this outcome; `release` deletes the parked entry once the terminal event is stored. */
  | { kind: 'ended'; outcome: LoopOutcome; release: () => Promise<void> };

export interface SettlementContext {
  store: ParkedTaskStore;
  statuses: TaskStatusStore;
  js: JetStreamClient;
  writer: Pick<TaskEventWriter, 'emit'>;
  /** Whether the delivery is the parked task queued again (RESUMED_PARK_HEADER). */
  queuedAgain: boolean;
  now: () => number;
  /** The status record this attempt writes, built as the runner builds its others. */
  statusRecord: (
    current: TaskStatusRecord | undefined,
    change: Partial<TaskStatusRecord>,
  ) => TaskStatusRecord;
}

export async function settleApprovals(
  context: SettlementContext,
  task: AssembledTask,
  awaiting: readonly string[],
): Promise<ApprovalSettlement> {
  const { store, js, writer, queuedAgain, now } = context;
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  const entry = await store.get(accountId, traceId);
  const records = awaiting.map((callId) => entry?.parked.approvals.find((a) => a.call_id === callId));
  if (entry === undefined || records.some((record) => record === undefined)) {
    const outcome = failure(
      ErrorCode.INTERNAL,
      `the approvals of call${awaiting.length === 1 ? '' : 's'} ${awaiting.join(', ')} were lost: the task's parked entry is gone`,
    );
    return { kind: 'ended', outcome, release: async () => {} };
  }
  const approvals = records as ApprovalRecord[];
  const { revision } = entry;
  const release = async () => {
    await store.delete(accountId, traceId, revision);
  };
  const expired = approvals.find((approval) => approval.state === ApprovalState.EXPIRED);
  const cancelled = approvals.some((approval) => approval.state === ApprovalState.CANCELLED);
  const pending = approvals.some((approval) => approval.state === ApprovalState.PENDING);
  // Only the task queued again goes on (any other delivery, such as a redelivery of the one that parked
  // it, is dropped; the task is queued here should the queuing have been missed), and only once every
  // approval is decided or one expired or was cancelled (the task then ends whatever the others are).
  if (!queuedAgain || (pending && expired === undefined && !cancelled)) {
    if (pending && expired === undefined && !cancelled) await keepWaiting(context, task);
    await store.resumeIfReady(js, accountId, traceId, { now: new Date(now()) });
    return { kind: 'waiting' };
  }
  if (expired !== undefined) {
    const waitedMs = Date.parse(expired.expires_at) - Date.parse(expired.requested_at);
    const outcome = failure(
      ErrorCode.APPROVAL_TIMEOUT,
      `the call ${expired.call_id} of ${expired.tool} waited for approval longer than its timeout (${waitedMs} ms, until ${expired.expires_at}); nobody approved or denied it`,
    );
    return { kind: 'ended', outcome, release };
  }
  if (cancelled) {
    const outcome = failure(ErrorCode.CANCELLED, 'the task was cancelled while it waited for approval');
    return { kind: 'ended', outcome, release };
  }
  const events: TaskEvent[] = [];
  for (const approval of approvals) {
    const approved = approval.state === ApprovalState.APPROVED;
    events.push(
      await writer.emit('approval_decided', {
        call_id: approval.call_id,
        tool: approval.tool,
        approved,
        ...(approval.comment === undefined ? {} : { comment: approval.comment }),
        decided_at: approval.decided_at ?? new Date(now()).toISOString(),
      }),
    );
    if (!approved) {
      const denied = deniedCallOutcome(approval.comment);
      if (!denied.ok) {
        events.push(
          await writer.emit('tool_result', {
            call_id: approval.call_id,
            tool: approval.tool,
            duration_ms: 0,
            ok: false,
            error: denied.error,
          }),
        );
      }
    }
  }
  await release();
  return { kind: 'decided', events };
}

/**
 * The status of a task that still waits, put right: a delivery that ran before it knew the task was parked
 * (a first delivery writes `running` without reading the log) leaves `running`, under which a cancel
 * would be sent to an attempt that no longer runs. A cancel requested meanwhile cancels the approvals
 * (the task is then queued again, and ends CANCELLED).
 */
async function keepWaiting(context: SettlementContext, task: AssembledTask): Promise<void> {
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  const status = await context.statuses.updateFrom(accountId, traceId, (current) =>
    current === undefined ||
    current.status === 'waiting_approval' ||
    isFinalTaskStatus(current.status) ||
    current.cancel_requested_at !== undefined
      ? undefined
      : context.statusRecord(current, { status: 'waiting_approval', error: undefined }),
  );
  const record = status?.record;
  if (record?.cancel_requested_at !== undefined && !isFinalTaskStatus(record.status)) {
    const at = new Date(context.now());
    await context.store.update(accountId, traceId, (parked) => cancelApprovals(parked, at));
  }
}

function failure(code: ErrorCode, message: string): LoopOutcome {
  return { type: 'error', data: { code, message, retryable: false } };
}

/**
 * The parked entry a queued-again task left behind when the attempt that wrote its decisions died before
 * deleting it (a later delivery finds the decisions in the log, not awaiting): deleted once, if it is still
 * the park this delivery was queued for (the header names its attempt) and was queued.
 */
export async function releaseLeftPark(
  store: ParkedTaskStore,
  task: AssembledTask,
  parkedAttempt: number,
): Promise<void> {
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  const entry = await store.get(accountId, traceId);
  if (entry === undefined || entry.parked.resumed_at === undefined) return;
  if (entry.parked.attempt !== parkedAttempt) return;
  await store.delete(accountId, traceId, entry.revision);
}
