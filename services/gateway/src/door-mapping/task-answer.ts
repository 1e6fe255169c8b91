/**
 * A finished task's answer as every door hands it out: the final text of `done` (never the streamed
 * pieces, which a resumed attempt may have voided), its parsed structured output when the task had an
 * output schema, and whether the answer was cut (`length`) or filtered. A failed task's error keeps the
 * mesh's `{code, message, retryable}`.
 */
import type { DoneEvent, ErrorEvent, TerminalEvent } from '@agentmesh/protocol';

export interface TaskAnswer {
  text: string;
  /** Present only when the task had an output schema and the answer validated against it. */
  output?: unknown;
  /** Why the answer is incomplete, when it is. */
  incomplete?: 'length' | 'content_filter';
}

export function taskAnswerOf(done: DoneEvent): TaskAnswer {
  const answer: TaskAnswer = { text: done.data.message };
  if (done.data.output !== undefined) answer.output = done.data.output;
  if (done.data.truncated) {
    answer.incomplete = done.data.finish_reason === 'content_filter' ? 'content_filter' : 'length';
  }
  return answer;
}

export type TaskFailure = Pick<ErrorEvent['data'], 'code' | 'message' | 'retryable'>;

/** The answer of a `done`, or the failure of an `error`. */
export function taskOutcomeOf(
  terminal: TerminalEvent,
): { ok: true; answer: TaskAnswer } | { ok: false; failure: TaskFailure } {
  if (terminal.type === 'done') return { ok: true, answer: taskAnswerOf(terminal) };
  const { code, message, retryable } = terminal.data;
  return { ok: false, failure: { code, message, retryable } };
}
