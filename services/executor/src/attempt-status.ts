/**
 * The rules an attempt's own status writes (`running` at its start, `waiting_approval` when it parks) obey,
 * so the status record never moves backwards: such a write never replaces the final status of an ended
 * task, nor the record of a newer attempt. Final writes are not bound by them: they follow a stored
 * terminal event, which is the truth, whichever attempt wrote it.
 */
import { isFinalTaskStatus, TaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';

/** Why an attempt may not write its status over the record it found. */
export const StatusConflict = {
  /** The task has ended: its final status follows a stored terminal event. */
  ENDED: 'ended',
  /** A newer attempt wrote the record: this one is stale. */
  SUPERSEDED: 'superseded',
  /**
   * Another executor instance's attempt says it runs the task, one this attempt did not find gone before
   * (attempt-owners.ts): a delivery that overlaps a live attempt.
   */
  HELD: 'held',
} as const;
export type StatusConflict = (typeof StatusConflict)[keyof typeof StatusConflict];

/**
 * A final status that an attempt or the assembler wrote after storing the task's terminal event. The
 * gateway's "could not be queued" error (attempt 0, no event) is not one: a task queued after all may run.
 */
export function hasEnded(record: TaskStatusRecord | undefined): boolean {
  return record !== undefined && isFinalTaskStatus(record.status) && record.attempt > 0;
}

/** The executor instance a `running` record says runs the task. */
export function runningInstance(record: TaskStatusRecord | undefined): string | undefined {
  return record?.status === TaskStatus.RUNNING ? record.executor_instance : undefined;
}

/**
 * Why attempt `attempt` may not write its own status over `current`; undefined when it may. With `holder`
 * (a `running` write), a record that says another instance runs the task is refused too, unless it is the
 * instance this attempt found gone (`takenFrom`).
 */
export function statusConflict(
  current: TaskStatusRecord | undefined,
  attempt: number,
  holder?: { instance: string; takenFrom?: string | undefined },
): StatusConflict | undefined {
  if (current === undefined) return undefined;
  if (hasEnded(current)) return StatusConflict.ENDED;
  if (current.attempt > attempt) return StatusConflict.SUPERSEDED;
  const running = runningInstance(current);
  if (
    holder !== undefined &&
    running !== undefined &&
    running !== holder.instance &&
    running !== holder.takenFrom
  ) {
    return StatusConflict.HELD;
  }
  return undefined;
}

/**
 * Whether attempt `attempt` of instance `instance` has lost its task, as the record shows it: the task
 * ended, a newer attempt wrote the record, or another instance's attempt runs it.
 */
export function ownershipLost(
  current: TaskStatusRecord | undefined,
  attempt: number,
  instance: string | undefined,
): boolean {
  if (current === undefined) return false;
  if (hasEnded(current) || current.attempt > attempt) return true;
  const running = runningInstance(current);
  return instance !== undefined && running !== undefined && running !== instance;
}
