/**
 * A sub-task's identity, made from its calling task's: the trace id is derived from the parent's trace id
 * and the call id (the first 32 hex digits of a SHA-256 of them), so an attempt that runs a call again
 * after its executor died (same call_id, issue 12's resume) submits the very same sub-task, which the
 * gateway answers as a repeat: the parent re-attaches to it instead of starting a second one.
 */
import { createHash } from 'node:crypto';
import { otelTraceIdOf, type TaskMeta, type TaskParent } from '@agentmesh/protocol';

export function subtaskTraceId(parentTraceId: string, callId: string): string {
  return createHash('sha256')
    .update(`agentmesh-subtask\0${parentTraceId}\0${callId}`)
    .digest('hex')
    .slice(0, 32);
}

/** The sub-task's link to the calling task: one level deeper, in the root task's trace. */
export function subtaskParent(meta: Pick<TaskMeta, 'trace_id' | 'parent'>, callId: string): TaskParent {
  return {
    trace_id: meta.trace_id,
    call_id: callId,
    root_trace_id: otelTraceIdOf(meta),
    depth: (meta.parent?.depth ?? 0) + 1,
  };
}
