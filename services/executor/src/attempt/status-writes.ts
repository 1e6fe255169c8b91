/**
 * The status record writes of an attempt that are not its own compare-and-set rules (attempt-status.ts):
 * the record an attempt writes, the final status that follows a stored terminal event, and the repair a
 * stale attempt makes when the attempt that stored the terminal event died before its final write.
 */
import { TaskEventWriter, type VersionedTaskStatus } from '@agentmesh/bus';
import {
  finalStatusFields,
  type AssembledTask,
  type TaskStatusRecord,
  type TerminalEvent,
} from '@agentmesh/protocol';
import { releaseThread } from '../thread-turns.js';
import type { TaskRunnerDependencies } from './runner-dependencies.js';

export class AttemptStatusWrites {
  constructor(
    private readonly deps: Pick<TaskRunnerDependencies, 'js' | 'jsm' | 'statuses' | 'threads' | 'log'>,
    private readonly now: () => number,
  ) {}

  /**
   * Makes the status record say what the task's terminal event says, if it has one: the terminal event is
   * the truth, and the attempt that wrote it may have died before its final status write. Called by an
   * attempt that learns it is stale; a failure is logged (the task's redelivery repairs it too).
   */
  async repair(task: AssembledTask): Promise<void> {
    const { account_id: accountId, trace_id: traceId } = task.task_meta;
    try {
      const last = await TaskEventWriter.open(this.deps.js, this.deps.jsm, {
        accountId,
        traceId,
        attempt: 0,
      });
      if (last.terminal !== undefined) {
        await this.recordFinal(task, last.terminal.attempt, last.terminal);
      }
    } catch (error) {
      this.deps.log.warn({ err: error }, "could not check the task's status against its terminal event");
    }
  }

  async recordFinal(
    task: AssembledTask,
    attempt: number,
    terminal: TerminalEvent,
    known?: VersionedTaskStatus,
  ): Promise<void> {
    // The task list shows a finished task's run time, usage and cost without reading its events.
    const final = finalStatusFields(terminal);
    const meta = task.task_meta;
    await this.deps.statuses.updateFrom(
      meta.account_id,
      meta.trace_id,
      (current) =>
        current?.last_seq === terminal.seq && current.status === final.status
          ? undefined
          : this.record(task, attempt, current, final),
      known,
    );
    // The run's end frees its thread (and starts the next queued run there); a redelivery does it again.
    if (this.deps.threads !== undefined) await releaseThread(this.deps.threads, task, this.deps.log);
  }

  /** `current` (or the queued record the gateway would have written) with `change` applied by this attempt. */
  record(
    task: AssembledTask,
    attempt: number,
    current: TaskStatusRecord | undefined,
    change: Partial<TaskStatusRecord>,
  ): TaskStatusRecord {
    const meta = task.task_meta;
    const base: TaskStatusRecord = current ?? {
      trace_id: meta.trace_id,
      account_id: meta.account_id,
      workflow_id: meta.workflow_id,
      submitted_at: meta.submitted_at,
      status: 'queued',
      attempt: 0,
      updated_at: meta.submitted_at,
    };
    // The version the task runs, in every record an attempt writes: it stays whatever the agent becomes.
    const version =
      meta.agent_version === undefined || meta.agent_digest === undefined
        ? {}
        : {
            agent_version: meta.agent_version,
            agent_digest: meta.agent_digest,
            ...(meta.tool_digests !== undefined && { tool_digests: meta.tool_digests }),
          };
    return { ...base, ...change, ...version, attempt, updated_at: new Date(this.now()).toISOString() };
  }
}
