/**
 * The management plane (seed 002: management REST kept apart from inference), under `/v1/admin`:
 * agents, plugins (one by one, or imported from an OpenAPI document), users' credentials and API keys. Only admin keys and trusted internal callers get
 * in; the check runs before the body is read.
 */
import type { AgentStore, ApiKeyStore, CredentialStore, PluginStore } from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import type { FastifyInstance } from 'fastify';
import { CallerKind, requirePrivileged } from '../auth.js';
import { Rejection, sendRejection } from '../errors.js';
import { registerAgentRoutes } from './admin-agents.js';
import { registerApiKeyRoutes } from './admin-api-keys.js';
import { registerCredentialRoutes } from './admin-credentials.js';
import { registerPluginImportRoute } from './admin-plugin-import.js';
import { registerPluginRoutes } from './admin-plugins.js';
import type { AuthenticateRequest } from './request-caller.js';

export const MANAGEMENT_PREFIX = '/v1/admin';

export interface ManagementRouteDeps {
  authenticate: AuthenticateRequest;
  agents: AgentStore;
  plugins: PluginStore;
  credentials: CredentialStore;
  apiKeys: ApiKeyStore;
  /** Body limit of the OpenAPI plugin import (documents are larger than other bodies). */
  pluginImportBodyLimitBytes: number;
  log: Logger;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The account a trusted caller named, when it named one: it may only manage that account. */
    managedAccount?: string;
  }
}

export function registerManagementRoutes(app: FastifyInstance, deps: ManagementRouteDeps): void {
  void app.register(
    async (admin) => {
      admin.decorateRequest('managedAccount', undefined);
      admin.addHook('onRequest', async (request, reply) => {
        const caller = await deps.authenticate(request);
        const privileged =
          caller instanceof Rejection ? caller : requirePrivileged(caller, 'the management plane');
        if (privileged instanceof Rejection) return sendRejection(reply, privileged);
        if (privileged.kind === CallerKind.TRUSTED && privileged.accountId !== undefined) {
          request.managedAccount = privileged.accountId;
        }
      });
      registerAgentRoutes(admin, deps.agents);
      registerPluginRoutes(admin, deps.plugins);
      registerPluginImportRoute(admin, {
        plugins: deps.plugins,
        bodyLimitBytes: deps.pluginImportBodyLimitBytes,
        log: deps.log,
      });
      registerCredentialRoutes(admin, deps.credentials);
      registerApiKeyRoutes(admin, deps.apiKeys);
    },
    { prefix: MANAGEMENT_PREFIX },
  );
}
