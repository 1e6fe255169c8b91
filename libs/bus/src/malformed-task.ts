/**
 * Ending a task whose bus message failed validation, so a client following it sees its end instead of
 * waiting forever. The account comes from the message's subject (only the mesh publishes under an
 * account's subject); the trace id, and the workflow id when it is readable, from whatever of the payload
 * parses. A payload naming another account than its subject is forged or re-published, and nothing is
 * written for it. Only a task nobody runs (no status yet, or `queued`) is ended: a malformed copy of a
 * running task's message never ends the task another worker owns.
 */
import {
  ErrorCode,
  EventType,
  isAccountId,
  isTraceId,
  parseTaskSubject,
  TaskStatus,
  WorkflowId,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { TaskStatusStore } from './stores/task-status-store.js';
import { TaskEventWriter } from './task-event-writer.js';

/** Why a task message was refused; bounded, so it serves as a metric attribute. */
export const MalformedTaskReason = {
  /** The subject is not a task subject of the stage the consumer reads. */
  SUBJECT: 'subject',
  NOT_JSON: 'not_json',
  /** JSON that does not match the task's schema. */
  SCHEMA: 'schema',
  /** The payload names another account than its subject. */
  ACCOUNT_MISMATCH: 'account_mismatch',
} as const;
export type MalformedTaskReason = (typeof MalformedTaskReason)[keyof typeof MalformedTaskReason];

/** What of a malformed task message can be trusted to address its task. */
export interface MalformedTaskIdentity {
  readonly accountId: string;
  readonly traceId: string;
  readonly workflowId?: string;
}

const decoder = new TextDecoder();

/** The task a malformed message belongs to, or undefined when it cannot be told (or must not be written). */
export function readMalformedTaskIdentity(
  subject: string,
  data: Uint8Array,
): MalformedTaskIdentity | undefined {
  const accountId = parseTaskSubject(subject)?.accountId;
  if (accountId === undefined) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
  const meta = isRecord(body) && isRecord(body.task_meta) ? body.task_meta : undefined;
  if (meta === undefined || !isTraceId(meta.trace_id)) return undefined;
  if (meta.account_id !== undefined && (!isAccountId(meta.account_id) || meta.account_id !== accountId)) {
    return undefined;
  }
  const workflowId = WorkflowId.safeParse(meta.workflow_id);
  return {
    accountId,
    traceId: meta.trace_id,
    ...(workflowId.success ? { workflowId: workflowId.data } : {}),
  };
}

export interface MalformedTaskEnding {
  /** Whether this call wrote the `error` event (false: the task had ended, or somebody runs it). */
  readonly emitted: boolean;
  /** Whether the status record now says `error`. */
  readonly statusWritten: boolean;
}

export interface EndMalformedTaskOptions {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly statuses: TaskStatusStore;
  readonly identity: MalformedTaskIdentity;
  /** Why, in words safe to show the client: paths and reasons, never payload values. */
  readonly problem: string;
  readonly attempt: number;
  readonly headers?: () => MsgHdrs;
  readonly now?: () => Date;
}

/** Writes the `error` event (INVALID_REQUEST) and the `error` status of the task a malformed message named. */
export async function endMalformedTask(options: EndMalformedTaskOptions): Promise<MalformedTaskEnding> {
  const { identity, statuses } = options;
  const now = options.now ?? (() => new Date());
  const current = await statuses.get(identity.accountId, identity.traceId);
  if (current !== undefined && current.status !== TaskStatus.QUEUED) {
    return { emitted: false, statusWritten: current.status === TaskStatus.ERROR };
  }
  const writer = await TaskEventWriter.open(options.js, options.jsm, {
    accountId: identity.accountId,
    traceId: identity.traceId,
    attempt: options.attempt,
    ...(options.headers ? { headers: options.headers } : {}),
    now,
  });
  if (writer.terminal !== undefined) return { emitted: false, statusWritten: false };
  const error = {
    code: ErrorCode.INVALID_REQUEST,
    message: `the task message is malformed: ${options.problem}`,
    retryable: false,
  };
  await writer.emit(EventType.ERROR, error);
  const stored = await statuses.update(identity.accountId, identity.traceId, (record) => {
    // Started since it was read: the task is somebody else's now.
    if (record !== undefined && record.status !== TaskStatus.QUEUED) return undefined;
    const workflowId = record?.workflow_id ?? identity.workflowId;
    // Without a workflow id there is no valid record to create; the error event alone ends the task.
    if (workflowId === undefined) return undefined;
    const next: TaskStatusRecord = {
      trace_id: identity.traceId,
      account_id: identity.accountId,
      ...record,
      workflow_id: workflowId,
      status: TaskStatus.ERROR,
      attempt: options.attempt,
      updated_at: now().toISOString(),
      last_seq: writer.seq,
      error,
    };
    return next;
  });
  return { emitted: true, statusWritten: stored?.status === TaskStatus.ERROR };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
