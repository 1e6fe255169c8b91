/**
 * The management routes of webhooks, under `/v1/admin` (the management plane's authentication applies):
 * - `POST /webhooks` {url, events?, description?} → 201 with the signing secret, shown this once;
 * - `GET /webhooks`, `GET /webhooks/:id` (never the secret), `DELETE /webhooks/:id`;
 * - `POST /webhooks/:id/rotate-secret` {previous_valid_for_s?} → the new secret, shown once;
 * - `POST /webhooks/:id/test` → one signed `webhook.test` POST, answered with its outcome (not retried);
 * - `GET /webhooks/dead-letters`, `POST /webhooks/dead-letters/:webhook_id/redrive`, `DELETE` of one.
 *
 * Endpoints belong to an account: the caller names it (x-account-id, or its API key's), and sees and
 * changes that account's only; another account's id is a 404. An admin naming no account may list every
 * account's dead letters, nothing else. A URL the deployment's SSRF guard refuses (scheme, private,
 * loopback, link-local or metadata address, also once its host name is resolved) is a 400 at registration.
 */
import type { WebhookDeadLetterStore, WebhookStore } from '@agentmesh/bus';
import {
  WebhookEndpointCreate,
  WebhookEndpointId,
  WebhookEventType,
  WebhookMessageId,
  WebhookRotateRequest,
  webhookDeadLetterView,
  webhookDeliverySubject,
  type WebhookDeadLetterList,
  type WebhookDelivery,
  type WebhookEndpointList,
  type WebhookTestResult,
} from '@agentmesh/protocol';
import { OutboundDeniedError } from '@agentmesh/runtime/outbound-guard';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';
import { deliveryMessageId } from './webhook-events.js';
import type { WebhookSender } from './webhook-sender.js';

export interface WebhookRouteDeps {
  endpoints: WebhookStore;
  deadLetters: WebhookDeadLetterStore;
  sender: WebhookSender;
  js: JetStreamClient;
  /**
   * Makes sure the shared status consumer exists before an endpoint is stored: until the first endpoint,
   * no gateway reads status writes (status-fanout.ts).
   */
  ensureStatusConsumer(): Promise<void>;
}

interface IdParams {
  Params: { id: string };
}

function accountOf(request: FastifyRequest): string | Rejection {
  return (
    request.managedAccount ?? new InvalidRequest('webhooks belong to an account: name it in x-account-id')
  );
}

function endpointIdOf(request: FastifyRequest<IdParams>): string | Rejection {
  const parsed = WebhookEndpointId.safeParse(request.params.id);
  return parsed.success ? parsed.data : InvalidRequest.fromZod(parsed.error, 'id');
}

async function refusedTarget(sender: WebhookSender, url: string): Promise<Rejection | undefined> {
  try {
    await sender.checkTarget(url);
    return undefined;
  } catch (error) {
    if (error instanceof OutboundDeniedError) {
      return new InvalidRequest(
        `url ${error.target} is not allowed for webhooks: ${error.reason} (this deployment's WEBHOOK_ALLOW_HOSTS does not list it)`,
        { target: error.target, reason: error.reason },
      );
    }
    const code = (error as { code?: string }).code;
    return new InvalidRequest(`url host does not resolve${code ? ` (${code})` : ''}`);
  }
}

export function registerWebhookRoutes(app: FastifyInstance, deps: WebhookRouteDeps): void {
  const { endpoints, deadLetters, sender } = deps;

  app.post('/webhooks', async (request, reply) => {
    const accountId = accountOf(request);
    if (accountId instanceof Rejection) return sendRejection(reply, accountId);
    const body = WebhookEndpointCreate.safeParse(request.body ?? {});
    if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
    const refused = await refusedTarget(sender, body.data.url);
    if (refused) return sendRejection(reply, refused);
    await deps.ensureStatusConsumer();
    return reply.code(201).send(await endpoints.create(accountId, body.data));
  });

  app.get('/webhooks', async (request, reply) => {
    const accountId = accountOf(request);
    if (accountId instanceof Rejection) return sendRejection(reply, accountId);
    const answer: WebhookEndpointList = { webhooks: await endpoints.list(accountId) };
    return answer;
  });

  app.get('/webhooks/dead-letters', async (request) => {
    const letters = await deadLetters.list(request.managedAccount);
    const answer: WebhookDeadLetterList = { dead_letters: letters.map(webhookDeadLetterView) };
    return answer;
  });

  app.post<{ Params: { webhook_id: string } }>(
    '/webhooks/dead-letters/:webhook_id/redrive',
    async (request, reply) => {
      const accountId = accountOf(request);
      if (accountId instanceof Rejection) return sendRejection(reply, accountId);
      const id = WebhookMessageId.safeParse(request.params.webhook_id);
      if (!id.success) return sendRejection(reply, InvalidRequest.fromZod(id.error, 'webhook_id'));
      const letter = await deadLetters.get(accountId, id.data);
      if (letter === undefined)
        return sendRejection(reply, new NotFound(`no dead webhook delivery ${id.data}`));
      const { last_error: _last, not_before: _notBefore, ...kept } = letter.delivery;
      const again: WebhookDelivery = { ...kept, attempt: 1, round: (kept.round ?? 0) + 1 };
      await deps.js.publish(webhookDeliverySubject(accountId), JSON.stringify(again), {
        msgID: deliveryMessageId(again),
      });
      await deadLetters.remove(accountId, id.data);
      return reply.code(202).send({ webhook_id: again.webhook_id, round: again.round });
    },
  );

  app.delete<{ Params: { webhook_id: string } }>(
    '/webhooks/dead-letters/:webhook_id',
    async (request, reply) => {
      const accountId = accountOf(request);
      if (accountId instanceof Rejection) return sendRejection(reply, accountId);
      const id = WebhookMessageId.safeParse(request.params.webhook_id);
      if (!id.success) return sendRejection(reply, InvalidRequest.fromZod(id.error, 'webhook_id'));
      if (!(await deadLetters.remove(accountId, id.data))) {
        return sendRejection(reply, new NotFound(`no dead webhook delivery ${id.data}`));
      }
      return reply.code(204).send();
    },
  );

  app.get<IdParams>('/webhooks/:id', async (request, reply) => {
    const accountId = accountOf(request);
    if (accountId instanceof Rejection) return sendRejection(reply, accountId);
    const id = endpointIdOf(request);
    if (id instanceof Rejection) return sendRejection(reply, id);
    return (await endpoints.get(accountId, id)) ?? sendRejection(reply, missing(id));
  });

  app.delete<IdParams>('/webhooks/:id', async (request, reply) => {
    const accountId = accountOf(request);
    if (accountId instanceof Rejection) return sendRejection(reply, accountId);
    const id = endpointIdOf(request);
    if (id instanceof Rejection) return sendRejection(reply, id);
    if (!(await endpoints.delete(accountId, id))) return sendRejection(reply, missing(id));
    return reply.code(204).send();
  });

  app.post<IdParams>('/webhooks/:id/rotate-secret', async (request, reply) => {
    const accountId = accountOf(request);
    if (accountId instanceof Rejection) return sendRejection(reply, accountId);
    const id = endpointIdOf(request);
    if (id instanceof Rejection) return sendRejection(reply, id);
    const body = WebhookRotateRequest.safeParse(request.body ?? {});
    if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
    const rotated = await endpoints.rotateSecret(accountId, id, body.data.previous_valid_for_s * 1000);
    return rotated ?? sendRejection(reply, missing(id));
  });

  app.post<IdParams>('/webhooks/:id/test', async (request, reply) => {
    const accountId = accountOf(request);
    if (accountId instanceof Rejection) return sendRejection(reply, accountId);
    const id = endpointIdOf(request);
    if (id instanceof Rejection) return sendRejection(reply, id);
    const target = await endpoints.target(accountId, id);
    if (target === undefined) return sendRejection(reply, missing(id));
    const webhookId = `msg_${randomBytes(16).toString('hex')}`;
    const body = JSON.stringify({
      type: WebhookEventType.WEBHOOK_TEST,
      timestamp: new Date().toISOString(),
      data: { account_id: accountId, endpoint_id: id },
    });
    const outcome = await sender.send(target.endpoint.url, webhookId, body, target.secrets);
    const answer: WebhookTestResult = outcome.ok
      ? { webhook_id: webhookId, delivered: true, status: outcome.status }
      : {
          webhook_id: webhookId,
          delivered: false,
          ...(outcome.status === undefined ? {} : { status: outcome.status }),
          error: outcome.error,
        };
    return answer;
  });
}

function missing(id: string): NotFound {
  return new NotFound(`no webhook endpoint ${id} in this account`);
}
