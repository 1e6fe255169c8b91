/**
 * People deciding on the tool calls a parked task waits on (`POST /v1/tasks/{id}/approvals/{call_id}`,
 * `GET /v1/tasks/{id}/approvals`). A decision is taken with `decideApproval` through a compare-and-set
 * change of the task's entry in `mesh_parked_tasks`, so two people deciding at once never both win; once
 * every approval is decided the task is queued again on its assembled subject (`resumeIfReady`), where any
 * executor resumes it from its events.
 *
 * The task's status stays `waiting_approval` until an executor takes the queued task up: the executor owns
 * the status of a running attempt, and a second writer here would race it. `resumed: true` in the reply
 * says the task is queued again.
 *
 * Sending the same decision again (same approve, same comment) answers 200 with the current approvals, so
 * a client may retry a decision whose answer it lost; a different decision on a decided call, or any on an
 * expired or cancelled one, is 409 CONFLICT naming the approval's state. Comments are people's text: they
 * never reach a log line (only their length does).
 */
import {
  ApprovalState,
  isFinalTaskStatus,
  TaskApprovals,
  type ApprovalDecisionRequest,
  type ApprovalRecord,
  type ParkedTask,
} from '@agentmesh/protocol';
import {
  decideApproval,
  DecisionRefusal,
  type ParkedTaskStore,
  type TaskStatusStore,
  type VersionedParkedTask,
} from '@agentmesh/bus';
import { injectTraceContext, taskRootContext, type Logger } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';
import { context, trace } from '@opentelemetry/api';
import { Conflict, NotFound, Rejection, ServiceUnavailable } from './errors.js';
import { ownedTaskStatus } from './task-lookup.js';

export interface ApprovalDeskOptions {
  js: JetStreamClient;
  statuses: TaskStatusStore;
  parked: ParkedTaskStore;
  log: Logger;
  now?: () => Date;
}

const tracer = trace.getTracer('gateway');

/** Why a decision was refused, worked out inside the compare-and-set change. */
type Refusal =
  | { readonly kind: typeof DecisionRefusal.UNKNOWN_CALL }
  | { readonly kind: typeof DecisionRefusal.NOT_PENDING; readonly approval: ApprovalRecord }
  /** The task was queued again already (another approval expired or was cancelled). */
  | { readonly kind: 'resumed'; readonly approval: ApprovalRecord };

export class ApprovalDesk {
  private readonly now: () => Date;

  constructor(private readonly options: ApprovalDeskOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** The approvals of the task's current park; an empty list when it is not parked. */
  async list(traceId: string, accountId: string): Promise<TaskApprovals | Rejection> {
    const status = await ownedTaskStatus(this.options.statuses, traceId, accountId);
    if (status instanceof Rejection) return status;
    let current: VersionedParkedTask | undefined;
    try {
      current = await this.options.parked.get(accountId, traceId);
    } catch (error) {
      return this.unavailable(error);
    }
    return current === undefined
      ? { trace_id: traceId, approvals: [], resumed: false }
      : approvalsOf(current.parked);
  }

  /** Records one decision and queues the task again when it was the last one awaited. */
  async decide(
    traceId: string,
    accountId: string,
    callId: string,
    decision: ApprovalDecisionRequest,
  ): Promise<TaskApprovals | Rejection> {
    const span = tracer.startSpan('gateway.approval_decision', {}, taskRootContext(traceId));
    try {
      return await context.with(trace.setSpan(context.active(), span), () =>
        this.takeDecision(traceId, accountId, callId, decision),
      );
    } finally {
      span.end();
    }
  }

  private async takeDecision(
    traceId: string,
    accountId: string,
    callId: string,
    decision: ApprovalDecisionRequest,
  ): Promise<TaskApprovals | Rejection> {
    const status = await ownedTaskStatus(this.options.statuses, traceId, accountId);
    if (status instanceof Rejection) return status;
    if (isFinalTaskStatus(status.status)) {
      return new Conflict(`task ${traceId} has already ended (${status.status})`, { status: status.status });
    }
    const decidedAt = this.now();
    // Set by the change (its last run is the one that counts): TS does not follow writes in callbacks.
    const refused: { refusal?: Refusal } = {};
    let stored: VersionedParkedTask | undefined;
    try {
      stored = await this.options.parked.update(accountId, traceId, (parked) => {
        delete refused.refusal;
        const pending = parked.approvals.find((approval) => approval.call_id === callId);
        if (pending?.state === ApprovalState.PENDING && parked.resumed_at !== undefined) {
          refused.refusal = { kind: 'resumed', approval: pending };
          return undefined;
        }
        const outcome = decideApproval(parked, callId, decision, decidedAt);
        if (outcome.ok) return outcome.parked;
        refused.refusal =
          outcome.refusal === DecisionRefusal.UNKNOWN_CALL || outcome.approval === undefined
            ? { kind: DecisionRefusal.UNKNOWN_CALL }
            : { kind: DecisionRefusal.NOT_PENDING, approval: outcome.approval };
        return undefined;
      });
    } catch (error) {
      return this.unavailable(error);
    }
    if (stored === undefined) {
      return new Conflict(`task ${traceId} is not waiting for approval (${status.status})`, {
        status: status.status,
      });
    }
    const { refusal } = refused;
    const rejection = refusal === undefined ? undefined : refusalOf(traceId, callId, decision, refusal);
    if (rejection instanceof Rejection) return rejection;

    let resumed: boolean;
    try {
      resumed = await this.options.parked.resumeIfReady(this.options.js, accountId, traceId, {
        now: decidedAt,
        headers: injectTraceContext(),
      });
    } catch (error) {
      // The decision is stored; the next decision, a cancel or an executor's timeout watch queues it.
      this.options.log.error(
        { err: error, account_id: accountId },
        'approved task could not be queued again',
      );
      return new ServiceUnavailable('the decision is stored but the task could not be queued again; retry', {
        cause: error,
      });
    }
    if (refusal === undefined) {
      this.options.log.info(
        {
          account_id: accountId,
          approve: decision.approve,
          comment_length: decision.comment?.length ?? 0,
          resumed,
        },
        'tool call approval decided',
      );
    }
    // Re-read for `resumed_at`; the answer stands on what was stored when the read fails.
    const after = resumed ? await this.options.parked.get(accountId, traceId).catch(() => undefined) : stored;
    return approvalsOf((after ?? stored).parked, resumed);
  }

  private unavailable(error: unknown): Rejection {
    this.options.log.error({ err: error }, 'parked tasks unavailable');
    return new ServiceUnavailable('approvals are unavailable right now; retry', { cause: error });
  }
}

/** A refusal as the caller sees it; undefined for a repeat of the decision already taken (answered 200). */
function refusalOf(
  traceId: string,
  callId: string,
  decision: ApprovalDecisionRequest,
  refusal: Refusal,
): Rejection | undefined {
  switch (refusal.kind) {
    case DecisionRefusal.UNKNOWN_CALL:
      return new NotFound(`task ${traceId} waits on no approval of call ${callId}`);
    case 'resumed':
      return new Conflict(
        `task ${traceId} no longer waits on call ${callId}: another of its approvals ended the wait`,
        { call_id: callId, state: refusal.approval.state },
      );
    case DecisionRefusal.NOT_PENDING: {
      const { approval } = refusal;
      const sameDecision =
        approval.state === (decision.approve ? ApprovalState.APPROVED : ApprovalState.DENIED) &&
        approval.comment === decision.comment;
      if (sameDecision) return undefined;
      return new Conflict(`the approval of call ${callId} is ${approval.state} already`, {
        call_id: callId,
        state: approval.state,
      });
    }
  }
}

function approvalsOf(parked: ParkedTask, resumed = false): TaskApprovals {
  return TaskApprovals.parse({
    trace_id: parked.trace_id,
    approvals: parked.approvals,
    resumed: resumed || parked.resumed_at !== undefined,
  });
}
