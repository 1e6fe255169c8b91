/**
 * Cancelling a task (libs/bus `requestTaskCancel`, which executors use for sub-tasks too): the status record gets `cancel_requested_at` (so a task that has not started
 * never runs: the assembler and executor check the flag first) and a CancelSignal goes out on
 * `mesh.control.cancel.<account>.<trace_id>` (so the executor running it aborts now). Cancelling twice is
 * harmless and sends the signal again; a task that has already ended cannot be cancelled.
 */
import { isFinalTaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';
import { requestTaskCancel, type TaskStatusStore } from '@agentmesh/bus';
import { injectTraceContext, taskRootContext, type Logger } from '@agentmesh/runtime';
import type { NatsConnection } from '@nats-io/transport-node';
import { context, trace } from '@opentelemetry/api';
import type { Rejection } from './errors.js';
import { Conflict, NotFound, ServiceUnavailable } from './errors.js';

export interface TaskCancellerOptions {
  nc: NatsConnection;
  statuses: TaskStatusStore;
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
    return record;
  }
}
