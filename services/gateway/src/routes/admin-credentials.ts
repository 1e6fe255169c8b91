/**
 * Credentials, write-only, in two sets per account (a run uses the user's own first, then the account's):
 * - one user's: `PUT /accounts/:account_id/users/:user_id/credentials/:name` with `{value}`;
 * - the account-wide set, serving every user of the account: `PUT /accounts/:account_id/credentials/:name`.
 * Each is stored encrypted at rest; `GET .../credentials` lists names only; `DELETE .../:name` → 204 / 404.
 * A value is never echoed, logged or returned. A caller confined to an account (x-account-id) manages only
 * that account's sets.
 */
import { AccountId, CredentialName, UserId } from '@agentmesh/protocol';
import type { CredentialStore } from '@agentmesh/bus';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Forbidden, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';

const AccountParams = z.object({ account_id: AccountId });
const AccountCredentialParams = AccountParams.extend({ name: CredentialName });
const UserParams = AccountParams.extend({ user_id: UserId });
const CredentialParams = UserParams.extend({ name: CredentialName });
const CredentialWrite = z.strictObject({ value: z.string().min(1) });

type Params = Record<string, string>;

export function registerCredentialRoutes(app: FastifyInstance, credentials: CredentialStore): void {
  registerUserCredentialRoutes(app, credentials);
  registerAccountCredentialRoutes(app, credentials);
}

function registerUserCredentialRoutes(app: FastifyInstance, credentials: CredentialStore): void {
  const base = '/accounts/:account_id/users/:user_id/credentials';

  app.get<{ Params: Params }>(base, async (request, reply) => {
    const params = parseParams(UserParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    return { names: await credentials.listNames(params.account_id, params.user_id) };
  });

  app.put<{ Params: Params }>(`${base}/:name`, async (request, reply) => {
    const params = parseParams(CredentialParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    const value = parseValue(request);
    if (value instanceof Rejection) return sendRejection(reply, value);
    await credentials.put(params.account_id, params.user_id, params.name, value);
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

function registerAccountCredentialRoutes(app: FastifyInstance, credentials: CredentialStore): void {
  const base = '/accounts/:account_id/credentials';

  app.get<{ Params: Params }>(base, async (request, reply) => {
    const params = parseParams(AccountParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    return { names: await credentials.accountCredentialNames(params.account_id) };
  });

  app.put<{ Params: Params }>(`${base}/:name`, async (request, reply) => {
    const params = parseParams(AccountCredentialParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    const value = parseValue(request);
    if (value instanceof Rejection) return sendRejection(reply, value);
    await credentials.putAccountCredential(params.account_id, params.name, value);
    return reply.code(204).send();
  });

  app.delete<{ Params: Params }>(`${base}/:name`, async (request, reply) => {
    const params = parseParams(AccountCredentialParams, request);
    if (params instanceof Rejection) return sendRejection(reply, params);
    if (await credentials.deleteAccountCredential(params.account_id, params.name))
      return reply.code(204).send();
    return sendRejection(
      reply,
      new NotFound(`no account-wide credential ${params.name} in account ${params.account_id}`),
    );
  });
}

function parseValue(request: FastifyRequest): string | Rejection {
  const body = CredentialWrite.safeParse(request.body);
  return body.success ? body.data.value : InvalidRequest.fromZod(body.error);
}

function parseParams<S extends z.ZodType<{ account_id: string }>>(
  schema: S,
  request: FastifyRequest<{ Params: Params }>,
): z.infer<S> | Rejection {
  const parsed = schema.safeParse(request.params);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error, 'path');
  const params = parsed.data;
  if (request.managedAccount !== undefined && request.managedAccount !== params.account_id) {
    return new Forbidden('x-account-id names another account than the path');
  }
  return params;
}
