// Core NATS control messages. `mesh.control.cancel.<account>.<trace_id>` tells whichever executor runs the task
// to stop; the task then ends with an `error` event coded CANCELLED.
import { z } from 'zod';
import { IsoDateTime } from './ids.js';
import { AccountId } from './names.js';
import { TraceId } from './trace-id.js';

export const CancelSignal = z.object({
  account_id: AccountId,
  trace_id: TraceId,
  requested_at: IsoDateTime,
  reason: z.string().max(1024).optional(),
});
export type CancelSignal = z.infer<typeof CancelSignal>;

/**
 * `mesh.control.attempts.<executor instance>`: request/reply to one executor instance (the token its
 * `running` status record names in `executor_instance`): does it still run an attempt of this task? A
 * delivery of a task whose record says it runs elsewhere asks before doing any work, and leaves the task to
 * that attempt while it lives (an overlapping delivery: the server redelivered it while the attempt lived).
 */
export const ATTEMPTS_SUBJECT_PREFIX = 'mesh.control.attempts';

/** A random token per executor process, as `executor_instance` holds it (a subject token). */
export const ExecutorInstance = z.string().regex(/^[a-z0-9]{8,32}$/);

export function executorAttemptsSubject(instance: string): string {
  return `${ATTEMPTS_SUBJECT_PREFIX}.${ExecutorInstance.parse(instance)}`;
}

export const AttemptQuery = z.object({ account_id: AccountId, trace_id: TraceId });
export type AttemptQuery = z.infer<typeof AttemptQuery>;

/** `running`: the instance runs a live attempt of the task (not aborted, heartbeating its delivery). */
export const AttemptReply = z.object({ running: z.boolean() });
export type AttemptReply = z.infer<typeof AttemptReply>;
