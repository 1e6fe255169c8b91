/**
 * Cancelling a task (libs/bus `requestTaskCancel`, which executors use for sub-tasks too): the status record gets `cancel_requested_at` (so a task that has not started
 * never runs: the assembler and executor check the flag first) and a CancelSignal goes out on
 * `mesh.control.cancel.<account>.<trace_id>` (so the executor running it aborts now). Cancelling twice is
 * harmless and sends the signal again; a task that has already ended cannot be cancelled.
 *
 * A task parked for approval is held by no executor, so no signal reaches it: its pending approvals are
 * marked cancelled in `mesh_parked_tasks` and it is queued again, and the executor that takes it up sees
 * the cancel flag and ends it CANCELLED.
 */
import { isFinalTaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';
import { requestTaskCancel, type ParkedTaskStore, type TaskStatusStore } from '@agentmesh/bus';
import { injectTraceContext, taskRootContext, type Logger } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { context, trace } from '@opentelemetry/api';
import { Conflict, NotFound, Rejection, ServiceUnavailable } from './errors.js';

export interface TaskCancellerOptions {
  nc: NatsConnection;
  js: JetStreamClient;
  statuses: TaskStatusStore;
  /** Parked tasks: a cancel ends their wait for approval. */
  parked: ParkedTaskStore;
  log: Logger;
  now?: () => Date;
}

const tracer = trace.getTracer('gateway');

export class TaskCanceller {
  private readonly now: () => Date;

  constructor(private readonly options: TaskCancellerOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** The task's status record after the request, or why it cannot be cancelled. */
  async cancel(traceId: string, accountId: string, reason?: string): Promise<TaskStatusRecord | Rejection> {
    const span = tracer.startSpan('gateway.cancel', {}, taskRootContext(traceId));
    try {
      return await context.with(trace.setSpan(context.active(), span), () =>
        this.requestCancel(traceId, accountId, reason),
      );
    } finally {
      span.end();
    }
  }

  private async requestCancel(
    traceId: string,
    accountId: string,
    reason: string | undefined,
  ): Promise<TaskStatusRecord | Rejection> {
    let record: TaskStatusRecord | undefined;
    try {
      record = await requestTaskCancel(this.options.nc, this.options.statuses, {
        accountId,
        traceId,
        requestedAt: this.now(),
        headers: injectTraceContext(),
        ...(reason === undefined ? {} : { reason }),
      });
    } catch (error) {
      this.options.log.error({ err: error }, 'task status unavailable');
      return new ServiceUnavailable('task status is unavailable right now; retry', { cause: error });
    }
    if (record === undefined) return new NotFound(`no task ${traceId}`);
    if (isFinalTaskStatus(record.status)) {
      return new Conflict(`task ${traceId} has already ended (${record.status})`, { status: record.status });
    }
    this.options.log.info({ account_id: accountId }, 'task cancel requested');
    const unparked = await this.endApprovalWait(traceId, accountId);
    return unparked instanceof Rejection ? unparked : record;
  }

  /** Cancels the pending approvals of a parked task and queues it again (nothing when it is not parked). */
  private async endApprovalWait(traceId: string, accountId: string): Promise<void | Rejection> {
    const now = this.now();
    try {
      const resumed = await this.options.parked.cancelWait(this.options.js, accountId, traceId, {
        now,
        headers: injectTraceContext(),
      });
      if (resumed)
        this.options.log.info({ account_id: accountId }, 'parked task queued again to end cancelled');
    } catch (error) {
      this.options.log.error({ err: error, account_id: accountId }, 'parked task could not be unparked');
      return new ServiceUnavailable('the cancel is recorded but the waiting task could not be woken; retry', {
        cause: error,
      });
    }
  }
}
