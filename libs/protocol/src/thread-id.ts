// A thread's id, the strategy for a message arriving while a run is active, and a task's link to its thread.
// Apart from threads.ts so the task schemas can name a thread without importing the thread records.
import { z } from 'zod';

const THREAD_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A thread id is one NATS subject token (and one KV key token), so NATS permissions can confine it. */
export const ThreadId = z
  .string()
  .regex(THREAD_ID_PATTERN, 'thread id must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"');
export type ThreadId = z.infer<typeof ThreadId>;

export function isThreadId(value: unknown): value is ThreadId {
  return typeof value === 'string' && THREAD_ID_PATTERN.test(value);
}

/**
 * What a message does when its thread already has an active run: `reject` (409 naming the active
 * trace id), `enqueue` (runs after it, in order), `interrupt` (the active run is cancelled at its next safe
 * point and keeps the turn it finished, without partial text), `rollback` (cancelled, its turn dropped).
 */
export const ThreadStrategy = z.enum(['reject', 'enqueue', 'interrupt', 'rollback']);
export type ThreadStrategy = z.infer<typeof ThreadStrategy>;
export const DEFAULT_THREAD_STRATEGY: ThreadStrategy = 'reject';

/** The task's link to its thread (in task_meta, so the vault is bound to it). */
export const TaskThread = z.strictObject({
  thread_id: ThreadId,
  /** Set by the assembler: how many of `input.messages` (after the system prompt) are history. */
  history_messages: z.int().nonnegative().optional(),
  /** Set by the assembler: how many of `input.messages` (the last ones) are the task's new input. */
  new_messages: z.int().nonnegative().optional(),
  /** Set by the assembler: the thread stream's last sequence of this thread when its history was read. */
  base_seq: z.int().nonnegative().optional(),
});
export type TaskThread = z.infer<typeof TaskThread>;
