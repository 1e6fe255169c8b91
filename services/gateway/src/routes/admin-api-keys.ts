/**
 * API keys of callers, stored in KV `mesh_api_keys` as digests: `POST /api-keys` registers one for an
 * account (the gateway generates it when none is given, and answers it this once);
 * `POST /api-keys/revoke` with `{api_key}` removes one.
 */
import { randomBytes } from 'node:crypto';
import { AccountId, AccountType } from '@agentmesh/protocol';
import type { ApiKeyStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { Forbidden, InvalidRequest, sendRejection } from '../errors.js';

const ApiKeyRegistration = z.strictObject({
  account_id: AccountId,
  account_type: AccountType.optional(),
  label: z.string().max(256).optional(),
  /** Bring your own key (at least 24 characters); generated when absent. */
  api_key: z.string().min(24).max(512).regex(/^\S+$/, 'api_key must not contain whitespace').optional(),
});
const ApiKeyRevocation = z.strictObject({ api_key: z.string().min(1) });

export function registerApiKeyRoutes(app: FastifyInstance, apiKeys: ApiKeyStore): void {
  app.post('/api-keys', async (request, reply) => {
    const parsed = ApiKeyRegistration.safeParse(request.body);
    if (!parsed.success) return sendRejection(reply, InvalidRequest.fromZod(parsed.error));
    const { api_key: given, ...grant } = parsed.data;
    if (request.managedAccount !== undefined && request.managedAccount !== grant.account_id) {
      return sendRejection(reply, new Forbidden('x-account-id names another account than account_id'));
    }
    const apiKey = given ?? `am_${randomBytes(32).toString('base64url')}`;
    await apiKeys.put(apiKey, grant);
    const stored = await apiKeys.lookup(apiKey);
    return reply.code(201).send({ ...stored, ...(given === undefined ? { api_key: apiKey } : {}) });
  });

  app.post('/api-keys/revoke', async (request, reply) => {
    const parsed = ApiKeyRevocation.safeParse(request.body);
    if (!parsed.success) return sendRejection(reply, InvalidRequest.fromZod(parsed.error));
    const grant = await apiKeys.lookup(parsed.data.api_key);
    if (grant && request.managedAccount !== undefined && request.managedAccount !== grant.account_id) {
      return sendRejection(reply, new Forbidden('the key belongs to another account than x-account-id'));
    }
    await apiKeys.revoke(parsed.data.api_key);
    return reply.code(204).send();
  });
}
