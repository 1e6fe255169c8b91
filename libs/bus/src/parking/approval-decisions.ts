/**
 * What a decision, a timeout or a cancel does to a parked task's approvals, as pure functions over
 * ParkedTask: the gateway (decisions, cancel) and the executors' timeout watch apply them through
 * {@link ParkedTaskStore.update}, then queue the task again once {@link isReadyToResume}.
 */
import { ApprovalState, type ApprovalRecord, type ParkedTask } from '@agentmesh/protocol';

export interface ApprovalDecision {
  readonly approve: boolean;
  readonly comment?: string;
}

/** Why a decision was not taken. */
export const DecisionRefusal = {
  /** The task waits on no approval of this call. */
  UNKNOWN_CALL: 'unknown_call',
  /** The approval was decided, expired or cancelled already. */
  NOT_PENDING: 'not_pending',
} as const;
export type DecisionRefusal = (typeof DecisionRefusal)[keyof typeof DecisionRefusal];

export type DecisionOutcome =
  | { readonly ok: true; readonly parked: ParkedTask }
  | { readonly ok: false; readonly refusal: DecisionRefusal; readonly approval?: ApprovalRecord };

/** The parked task with `callId`'s pending approval decided. */
export function decideApproval(
  parked: ParkedTask,
  callId: string,
  decision: ApprovalDecision,
  now: Date,
): DecisionOutcome {
  const approval = parked.approvals.find((candidate) => candidate.call_id === callId);
  if (approval === undefined) return { ok: false, refusal: DecisionRefusal.UNKNOWN_CALL };
  if (approval.state !== ApprovalState.PENDING) {
    return { ok: false, refusal: DecisionRefusal.NOT_PENDING, approval };
  }
  const decided: ApprovalRecord = {
    ...approval,
    state: decision.approve ? ApprovalState.APPROVED : ApprovalState.DENIED,
    decided_at: now.toISOString(),
    ...(decision.comment === undefined ? {} : { comment: decision.comment }),
  };
  return { ok: true, parked: replaceApproval(parked, decided) };
}

/** The parked task with every pending approval past its `expires_at` expired; undefined when none is. */
export function expireApprovals(parked: ParkedTask, now: Date): ParkedTask | undefined {
  const due = parked.approvals.filter(
    (approval) =>
      approval.state === ApprovalState.PENDING && Date.parse(approval.expires_at) <= now.getTime(),
  );
  if (due.length === 0) return undefined;
  return due.reduce(
    (task, approval) =>
      replaceApproval(task, { ...approval, state: ApprovalState.EXPIRED, decided_at: now.toISOString() }),
    parked,
  );
}

/** The parked task with every pending approval cancelled; undefined when none was pending. */
export function cancelApprovals(parked: ParkedTask, now: Date): ParkedTask | undefined {
  if (!parked.approvals.some((approval) => approval.state === ApprovalState.PENDING)) return undefined;
  return {
    ...parked,
    approvals: parked.approvals.map((approval) =>
      approval.state === ApprovalState.PENDING
        ? { ...approval, state: ApprovalState.CANCELLED, decided_at: now.toISOString() }
        : approval,
    ),
  };
}

/**
 * Whether the task should be queued again: every approval is decided, or one expired or was cancelled
 * (the task then ends, and waiting on the others is pointless). Never once it was queued.
 */
export function isReadyToResume(parked: ParkedTask): boolean {
  if (parked.resumed_at !== undefined) return false;
  return (
    parked.approvals.every((approval) => approval.state !== ApprovalState.PENDING) ||
    parked.approvals.some(
      (approval) => approval.state === ApprovalState.EXPIRED || approval.state === ApprovalState.CANCELLED,
    )
  );
}

/** When the next pending approval of the task expires; undefined when none is pending. */
export function nextApprovalExpiry(parked: ParkedTask): Date | undefined {
  const times = parked.approvals
    .filter((approval) => approval.state === ApprovalState.PENDING)
    .map((approval) => Date.parse(approval.expires_at));
  return times.length === 0 ? undefined : new Date(Math.min(...times));
}

function replaceApproval(parked: ParkedTask, approval: ApprovalRecord): ParkedTask {
  return {
    ...parked,
    approvals: parked.approvals.map((candidate) =>
      candidate.call_id === approval.call_id ? approval : candidate,
    ),
  };
}
