/**
 * Users' credentials, write-only: `PUT /accounts/:account_id/users/:user_id/credentials/:name` with
 * `{value}` stores it encrypted at rest; `GET .../credentials` lists names only; `DELETE .../:name`.
 * A value is never echoed, logged or returned.
 */
import { AccountId, CredentialName, UserId } from '@agentmesh/protocol';
import type { CredentialStore } from '@agentmesh/bus';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Forbidden, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';

const UserParams = z.object({ account_id: AccountId, user_id: UserId });
const CredentialParams = UserParams.extend({ name: CredentialName });
const CredentialWrite = z.strictObject({ value: z.string().min(1) });

type Params = Record<string, string>;

export function registerCredentialRoutes(app: FastifyInstance, credentials: CredentialStore): void {
  const base = '/accounts/:account_id/users/:user_id/credentials';

  app.get<{ Params: Params }>(base, async (request, reply) => {
    const params = parseParams(UserParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    return { names: await credentials.listNames(params.account_id, params.user_id) };
  });

  app.put<{ Params: Params }>(`${base}/:name`, async (request, reply) => {
    const params = parseParams(CredentialParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    const body = CredentialWrite.safeParse(request.body);
    if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
    await credentials.put(params.account_id, params.user_id, params.name, body.data.value);
    return reply.code(204).send();
  });

  app.delete<{ Params: Params }>(`${base}/:name`, async (request, reply) => {
    const params = parseParams(CredentialParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    if (await credentials.delete(params.account_id, params.user_id, params.name))
      return reply.code(204).send();
    return sendRejection(reply, new NotFound(`no credential ${params.name} for that user`));
  });
}

function parseParams<S extends typeof UserParams | typeof CredentialParams>(
  schema: S,
  request: FastifyRequest<{ Params: Params }>,
): z.infer<S> | Rejection {
  const parsed = schema.safeParse(request.params);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error, 'path');
  const params = parsed.data as z.infer<S>;
  if (request.managedAccount !== undefined && request.managedAccount !== params.account_id) {
    return new Forbidden('x-account-id names another account than the path');
  }
  return params;
}
