/**
 * A task's own webhook (`webhook` of its submission, LangGraph-style): accepted only on the origin (scheme,
 * host, port) of one of the account's registered endpoints, so a submitter can aim deliveries only where
 * the account's administrators already registered, and that endpoint's secret signs them. Kept in
 * `mesh_webhooks` under `<account>.task.<trace id>` until the task's final event is queued.
 */
import type { TaskWebhookStore, WebhookStore } from '@agentmesh/bus';
import { TASK_WEBHOOK_EVENTS, type TaskWebhookRequest } from '@agentmesh/protocol';
import { InvalidRequest, type Rejection } from '../errors.js';
import type { TaskWebhookRegistry } from '../task-submission.js';

export class TaskWebhooks implements TaskWebhookRegistry {
  constructor(
    private readonly endpoints: WebhookStore,
    private readonly tasks: TaskWebhookStore,
  ) {}

  async check(accountId: string, webhook: TaskWebhookRequest): Promise<Rejection | undefined> {
    return (await this.#endpointFor(accountId, webhook.url)) === undefined
      ? new InvalidRequest(
          `webhook.url must be on the origin (scheme, host and port) of one of the account's registered webhook endpoints; ${new URL(webhook.url).origin} is not (register it with POST /v1/admin/webhooks)`,
          { origin: new URL(webhook.url).origin },
        )
      : undefined;
  }

  async store(accountId: string, traceId: string, webhook: TaskWebhookRequest): Promise<void> {
    const endpoint = await this.#endpointFor(accountId, webhook.url);
    // Checked a moment ago; an endpoint deleted in between leaves the task without its webhook.
    if (endpoint === undefined) return;
    await this.tasks.put(accountId, traceId, {
      url: webhook.url,
      events: [...(webhook.events ?? TASK_WEBHOOK_EVENTS)],
      endpoint_id: endpoint,
    });
  }

  async #endpointFor(accountId: string, url: string): Promise<string | undefined> {
    const origin = new URL(url).origin;
    const endpoints = await this.endpoints.list(accountId);
    return endpoints.find((endpoint) => new URL(endpoint.url).origin === origin)?.id;
  }
}
