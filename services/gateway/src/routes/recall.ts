/**
 * Seed 004's HTTP forms of action recall, answered by the recall service over NATS:
 * - `POST /api/agent-retrieval/in/v1/kn/get_action_info?kn_id=…&at_id=…`
 * - `POST /api/action-recall/v1/knowledge-networks/:kn_id/action-types/:at_id/recall`
 * Body `{unique_identity}` or `{unique_identities: [...]}`; answer `{_dynamic_tools}` as the service gave
 * it, or the seed's error body with the seed's status.
 *
 * Callers: the gateway's usual ones (API key, admin key, or a trusted caller when TRUST_ACCOUNT_HEADERS);
 * and, as the seed demands, every request names its account in `x-account-id` and `x-account-type`
 * (missing → 400 INVALID_REQUEST): the recall service passes them on upstream. An API key may only name
 * its own account (and its own account type, when the key has one).
 */
import { ActionRecallRequest, RecallRequest } from '@agentmesh/protocol';
import { context, propagation } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { CallerKind, type Caller } from '../auth.js';
import { Forbidden, InvalidRequest, Rejection, sendRejection } from '../errors.js';
import { ACCOUNT_ID_HEADER, ACCOUNT_TYPE_HEADER, type RecallForwarder } from '../recall-forwarding.js';
import type { AuthenticateRequest } from './request-caller.js';

export const GET_ACTION_INFO_PATH = '/api/agent-retrieval/in/v1/kn/get_action_info';
export const ACTION_RECALL_PATH =
  '/api/action-recall/v1/knowledge-networks/:kn_id/action-types/:at_id/recall';

export interface RecallRouteDeps {
  authenticate: AuthenticateRequest;
  forwarder: RecallForwarder;
}

const RecallTarget = z.object({ kn_id: z.string().min(1), at_id: z.string().min(1) });

export function registerRecallRoutes(app: FastifyInstance, deps: RecallRouteDeps): void {
  app.post(GET_ACTION_INFO_PATH, (request, reply) =>
    answerRecall(deps, request, reply, request.query, 'query parameters'),
  );
  app.post(ACTION_RECALL_PATH, (request, reply) =>
    answerRecall(deps, request, reply, request.params, 'path'),
  );
}

async function answerRecall(
  deps: RecallRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  target: unknown,
  where: string,
): Promise<FastifyReply> {
  const caller = await deps.authenticate(request);
  if (caller instanceof Rejection) return sendRejection(reply, caller);
  const account = accountHeaders(request, caller);
  if (account instanceof Rejection) return sendRejection(reply, account);
  const ids = RecallTarget.safeParse(target ?? {});
  if (!ids.success) return sendRejection(reply, InvalidRequest.fromZod(ids.error, where));
  const body = ActionRecallRequest.safeParse(request.body ?? {});
  if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
  const recallRequest = RecallRequest.safeParse({ ...body.data, ...ids.data, ...account });
  if (!recallRequest.success) return sendRejection(reply, InvalidRequest.fromZod(recallRequest.error));

  // An HTTP caller's own trace continues through the recall service.
  const parent = propagation.extract(context.active(), request.headers);
  const outcome = await deps.forwarder.recall(recallRequest.data, parent);
  if (outcome instanceof Rejection) return sendRejection(reply, outcome);
  return reply.code(200).type('application/json; charset=utf-8').send(outcome);
}

function accountHeaders(
  request: FastifyRequest,
  caller: Caller,
): { account_id: string; account_type: string } | Rejection {
  const accountId = header(request, ACCOUNT_ID_HEADER);
  const accountType = header(request, ACCOUNT_TYPE_HEADER);
  if (accountId === undefined || accountType === undefined) {
    const missing = [
      ...(accountId === undefined ? [ACCOUNT_ID_HEADER] : []),
      ...(accountType === undefined ? [ACCOUNT_TYPE_HEADER] : []),
    ];
    return new InvalidRequest(
      `the ${missing.join(' and ')} header${missing.length > 1 ? 's are' : ' is'} required`,
      {
        missing_headers: missing,
      },
    );
  }
  // The authenticator has already refused an API key naming another account in x-account-id.
  if (
    caller.kind === CallerKind.API_KEY &&
    caller.accountType !== undefined &&
    caller.accountType !== accountType
  ) {
    return new Forbidden('x-account-type names another account type than the API key');
  }
  return { account_id: accountId, account_type: accountType };
}

function header(request: FastifyRequest, name: string): string | undefined {
  const raw = request.headers[name];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  return value ? value : undefined;
}
