/**
 * Ends a task the assembler cannot hand on: its terminal `error` event (unless an earlier attempt already
 * wrote one, so a redelivered task never gets two) and its status record (`cancelled` for a cancel,
 * `error` otherwise). A task that ran in a thread then frees it (and promotes the thread's next queued run,
 * which the gateways publish), as the executor does at a run's end.
 */
import { TaskEventWriter, type TaskStatusStore, type ThreadStore } from '@agentmesh/bus';
import { ErrorCode, EventType, TaskStatus, type TaskMeta, type TaskStatusRecord } from '@agentmesh/protocol';
import { injectTraceContext } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { AssemblyError } from './assembly-errors.js';

export class TaskFailureRecorder {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly statuses: TaskStatusStore,
    private readonly now: () => Date = () => new Date(),
    private readonly threads?: ThreadStore,
  ) {}

  /** Resolves with whether this call wrote the error event (false: the task had ended already). */
  async record(meta: TaskMeta, failure: AssemblyError, attempt: number): Promise<{ emitted: boolean }> {
    const writer = await TaskEventWriter.open(this.js, this.jsm, {
      accountId: meta.account_id,
      traceId: meta.trace_id,
      attempt,
      headers: () => injectTraceContext(),
      now: this.now,
    });
    const emitted = writer.terminal === undefined;
    if (emitted) await writer.emit(EventType.ERROR, failure.toEventData());
    await this.statuses.update(meta.account_id, meta.trace_id, (current) =>
      this.ended(meta, current, failure, attempt, writer.seq),
    );
    const thread = meta.thread?.thread_id;
    // A failed release is left to the gateways' stale-claim check (the task's status is final now).
    if (thread !== undefined && this.threads !== undefined) {
      await this.threads
        .release(meta.account_id, thread, meta.trace_id, { publish: false })
        .catch(() => undefined);
    }
    return { emitted };
  }

  private ended(
    meta: TaskMeta,
    current: TaskStatusRecord | undefined,
    failure: AssemblyError,
    attempt: number,
    lastSeq: number,
  ): TaskStatusRecord {
    return {
      trace_id: meta.trace_id,
      account_id: meta.account_id,
      workflow_id: meta.workflow_id,
      submitted_at: meta.submitted_at,
      ...current,
      status: failure.code === ErrorCode.CANCELLED ? TaskStatus.CANCELLED : TaskStatus.ERROR,
      attempt,
      updated_at: this.now().toISOString(),
      last_seq: lastSeq,
      error: { code: failure.code, message: failure.message, retryable: failure.retryable },
    };
  }
}
