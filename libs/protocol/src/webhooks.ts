// Completion webhooks: the endpoints an account registers, the events they get, the body delivered (Standard
// Webhooks), the delivery message queued on MESH_WEBHOOKS and the dead letter of a delivery out of attempts.
import { z } from 'zod';
import { ErrorCodeSchema } from './errors.js';
import { IsoDateTime, WorkflowId } from './ids.js';
import { AccountId } from './names.js';
import { TaskStatusSchema } from './task-status.js';
import { TraceId } from './trace-id.js';

export const WebhookEventType = {
  TASK_COMPLETED: 'task.completed',
  TASK_FAILED: 'task.failed',
  TASK_CANCELLED: 'task.cancelled',
  TASK_APPROVAL_REQUESTED: 'task.approval_requested',
  /** Sent only by `POST /v1/admin/webhooks/{id}/test`; never subscribed to. */
  WEBHOOK_TEST: 'webhook.test',
} as const;
export type WebhookEventType = (typeof WebhookEventType)[keyof typeof WebhookEventType];

/** The events an endpoint may subscribe to. */
export const TASK_WEBHOOK_EVENTS = [
  WebhookEventType.TASK_COMPLETED,
  WebhookEventType.TASK_FAILED,
  WebhookEventType.TASK_CANCELLED,
  WebhookEventType.TASK_APPROVAL_REQUESTED,
] as const;
export const TaskWebhookEvent = z.enum(TASK_WEBHOOK_EVENTS);
export type TaskWebhookEvent = z.infer<typeof TaskWebhookEvent>;

/** `wh_` and 24 hex digits: one subject/KV token. */
export const WebhookEndpointId = z
  .string()
  .regex(/^wh_[0-9a-f]{24}$/, 'a webhook endpoint id is wh_ and 24 hex digits');
export type WebhookEndpointId = z.infer<typeof WebhookEndpointId>;

/** The `webhook-id` header: `msg_` and 32 hex digits; the same for every attempt and re-drive of a delivery. */
export const WebhookMessageId = z
  .string()
  .regex(/^msg_[0-9a-f]{32}$/, 'a webhook message id is msg_ and 32 hex digits');
export type WebhookMessageId = z.infer<typeof WebhookMessageId>;

const WebhookUrl = z
  .url({ protocol: /^https?$/, error: 'url must be an absolute http or https URL' })
  .max(2048)
  .refine((value) => !/^[a-z]+:\/\/[^/]*@/i.test(value), 'url must not carry credentials (user:password@)');

/**
 * `webhook` of a task submission: where this task's events go besides the account's endpoints. Its origin
 * (scheme, host, port) must be that of one of the account's registered endpoints, whose secret signs it.
 */
export const TaskWebhookRequest = z.strictObject({
  url: WebhookUrl,
  /** Default: every task event. */
  events: z.array(TaskWebhookEvent).min(1).optional(),
});
export type TaskWebhookRequest = z.infer<typeof TaskWebhookRequest>;

/** `POST /v1/admin/webhooks`. */
export const WebhookEndpointCreate = z.strictObject({
  url: WebhookUrl,
  /** Default: every task event. */
  events: z.array(TaskWebhookEvent).min(1).optional(),
  description: z.string().max(500).optional(),
});
export type WebhookEndpointCreate = z.infer<typeof WebhookEndpointCreate>;

/** An endpoint as shown: never its secret. */
export const WebhookEndpointView = z.object({
  id: WebhookEndpointId,
  account_id: AccountId,
  url: z.string(),
  events: z.array(TaskWebhookEvent),
  description: z.string().optional(),
  created_at: IsoDateTime,
  secret_rotated_at: IsoDateTime.optional(),
});
export type WebhookEndpointView = z.infer<typeof WebhookEndpointView>;

/** Answer of create and rotate: the only times the signing secret (`whsec_<base64>`) is shown. */
export const WebhookEndpointWithSecret = WebhookEndpointView.extend({
  secret: z.string().startsWith('whsec_'),
});
export type WebhookEndpointWithSecret = z.infer<typeof WebhookEndpointWithSecret>;

export const WebhookEndpointList = z.object({ webhooks: z.array(WebhookEndpointView) });
export type WebhookEndpointList = z.infer<typeof WebhookEndpointList>;

/** `POST /v1/admin/webhooks/{id}/rotate-secret`: how long the old secret still signs (a second signature). */
export const WebhookRotateRequest = z.strictObject({
  previous_valid_for_s: z
    .int()
    .min(0)
    .max(7 * 24 * 3600)
    .default(24 * 3600),
});

/** The JSON body POSTed to an endpoint. Thin: ids, status, codes and links, never an answer or a credential. */
export const WebhookPayload = z.object({
  type: z.enum(WebhookEventType),
  timestamp: IsoDateTime,
  data: z.object({
    trace_id: TraceId.optional(),
    account_id: AccountId,
    workflow_id: WorkflowId.optional(),
    status: TaskStatusSchema.optional(),
    parent_trace_id: TraceId.optional(),
    error: z.object({ code: ErrorCodeSchema, message: z.string() }).optional(),
    links: z.object({ task: z.string(), events: z.string() }).optional(),
    endpoint_id: WebhookEndpointId.optional(),
  }),
});
export type WebhookPayload = z.infer<typeof WebhookPayload>;

/**
 * One delivery of one event to one endpoint, queued on `mesh.webhooks.deliver.<account>` (Nats-Msg-Id =
 * `<webhook_id>.<round>.<attempt>`). A failed attempt is queued again as attempt+1 with `not_before`.
 */
export const WebhookDelivery = z.object({
  webhook_id: WebhookMessageId,
  account_id: AccountId,
  endpoint_id: WebhookEndpointId,
  /** A task's own webhook URL (on the endpoint's origin); the endpoint's URL when absent. */
  url: z.string().max(2048).optional(),
  payload: WebhookPayload,
  /** 1 for the first try. */
  attempt: z.int().min(1),
  /** How many times an operator re-drove it from the dead letters (part of Nats-Msg-Id). */
  round: z.int().min(0).optional(),
  /** Not sent before this time (the backoff of a retry). */
  not_before: IsoDateTime.optional(),
  /** The last failure, carried into the dead letter. */
  last_error: z.string().max(1000).optional(),
  created_at: IsoDateTime,
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

/** A delivery out of attempts (or refused by the SSRF guard), kept for an operator to list and re-drive. */
export const WebhookDeadLetter = z.object({
  delivery: WebhookDelivery,
  reason: z.string().max(1000),
  dead_at: IsoDateTime,
});
export type WebhookDeadLetter = z.infer<typeof WebhookDeadLetter>;

export const WebhookDeadLetterView = z.object({
  webhook_id: WebhookMessageId,
  endpoint_id: WebhookEndpointId,
  account_id: AccountId,
  type: z.enum(WebhookEventType),
  trace_id: TraceId.optional(),
  attempts: z.int(),
  reason: z.string(),
  dead_at: IsoDateTime,
});
export type WebhookDeadLetterView = z.infer<typeof WebhookDeadLetterView>;

export function webhookDeadLetterView(letter: WebhookDeadLetter): WebhookDeadLetterView {
  const { delivery } = letter;
  return {
    webhook_id: delivery.webhook_id,
    endpoint_id: delivery.endpoint_id,
    account_id: delivery.account_id,
    type: delivery.payload.type,
    ...(delivery.payload.data.trace_id === undefined ? {} : { trace_id: delivery.payload.data.trace_id }),
    attempts: delivery.attempt,
    reason: letter.reason,
    dead_at: letter.dead_at,
  };
}

export const WebhookDeadLetterList = z.object({ dead_letters: z.array(WebhookDeadLetterView) });
export type WebhookDeadLetterList = z.infer<typeof WebhookDeadLetterList>;

/** Answer of `POST /v1/admin/webhooks/{id}/test`: one signed attempt, not retried. */
export const WebhookTestResult = z.object({
  webhook_id: WebhookMessageId,
  delivered: z.boolean(),
  status: z.int().optional(),
  error: z.string().optional(),
});
export type WebhookTestResult = z.infer<typeof WebhookTestResult>;
