/**
 * How many sub-tasks one task has started, across all its attempts: the calls that wrote
 * `subtask_started` in earlier attempts (from the task's event log, see resume/resume-point.ts) and those
 * of this attempt. A call counted before (a resumed call re-attaching to its sub-task) is not counted again.
 */
export class SubtaskFanOut {
  readonly #calls: Set<string>;

  constructor(
    readonly limit: number,
    earlierCalls: Iterable<string> = [],
  ) {
    this.#calls = new Set(earlierCalls);
  }

  /** Counts the call's sub-task; false (nothing counted) when the task has started `limit` already. */
  admit(callId: string): boolean {
    if (this.#calls.has(callId)) return true;
    if (this.#calls.size >= this.limit) return false;
    this.#calls.add(callId);
    return true;
  }

  get started(): number {
    return this.#calls.size;
  }
}
