/**
 * Which task status write is which webhook event, the thin body it is delivered with, and its webhook-id.
 *
 * A final status (done, error, cancelled) is one event per task: its webhook-id is derived from (endpoint,
 * account, trace id, event), so the same write read twice, or written twice, is one delivery (the stream's
 * Nats-Msg-Id). A task may wait for approval several times: each `waiting_approval` write is its own event,
 * told apart by the write's sequence in the status stream.
 */
import { createHash } from 'node:crypto';
import {
  TaskStatus,
  WebhookEventType,
  type TaskStatusRecord,
  type TaskWebhookEvent,
  type WebhookPayload,
} from '@agentmesh/protocol';

const EVENT_OF_STATUS: Partial<Record<TaskStatus, TaskWebhookEvent>> = {
  [TaskStatus.DONE]: WebhookEventType.TASK_COMPLETED,
  [TaskStatus.ERROR]: WebhookEventType.TASK_FAILED,
  [TaskStatus.CANCELLED]: WebhookEventType.TASK_CANCELLED,
  [TaskStatus.WAITING_APPROVAL]: WebhookEventType.TASK_APPROVAL_REQUESTED,
};

export function webhookEventOf(status: TaskStatus): TaskWebhookEvent | undefined {
  return EVENT_OF_STATUS[status];
}

/** What tells two events of one task apart: nothing for a final one, the write's sequence for an approval. */
export function eventOccurrence(event: TaskWebhookEvent, streamSeq: number): string {
  return event === WebhookEventType.TASK_APPROVAL_REQUESTED ? String(streamSeq) : '';
}

export function webhookMessageId(
  endpointId: string,
  accountId: string,
  traceId: string,
  event: string,
  occurrence: string,
): string {
  const digest = createHash('sha256')
    .update([endpointId, accountId, traceId, event, occurrence].join('\n'))
    .digest('hex');
  return `msg_${digest.slice(0, 32)}`;
}

/** The body: ids, status, error code and message, links; never the answer, a credential or the input. */
export function taskWebhookPayload(
  event: TaskWebhookEvent,
  record: TaskStatusRecord,
  publicBaseUrl: string | undefined,
): WebhookPayload {
  const base = publicBaseUrl ?? '';
  const task = `${base}/v1/tasks/${encodeURIComponent(record.trace_id)}`;
  return {
    type: event,
    timestamp: record.updated_at,
    data: {
      trace_id: record.trace_id,
      account_id: record.account_id,
      workflow_id: record.workflow_id,
      status: record.status,
      ...(record.parent_trace_id === undefined ? {} : { parent_trace_id: record.parent_trace_id }),
      ...(record.error === undefined
        ? {}
        : { error: { code: record.error.code, message: record.error.message.slice(0, 500) } }),
      links: { task, events: `${task}/events` },
    },
  };
}

/** A delivery's Nats-Msg-Id: one per (webhook id, re-drive round, attempt), so no queued attempt is doubled. */
export function deliveryMessageId(delivery: { webhook_id: string; round?: number; attempt: number }): string {
  return `${delivery.webhook_id}.${delivery.round ?? 0}.${delivery.attempt}`;
}
