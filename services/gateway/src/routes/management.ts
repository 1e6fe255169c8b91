/**
 * The management plane (seed 002: management REST kept apart from inference), under `/v1/admin`:
 * agents, plugins (one by one, or imported from an OpenAPI document), MCP servers, credentials (an
 * account's and its users'), the accounts an admin may act for, API keys, dead letters (tasks that ran out of deliveries: list, show, re-drive, drop) and webhook endpoints (webhooks/webhook-routes.ts).
 * Only admin keys and trusted internal callers get in; the check runs before the body is read.
 *
 * Tenancy: a caller naming an account (`x-account-id`, required of trusted callers) manages that account
 * only: its own agents and plugins (reading the shared catalogue behind them), its users' credentials,
 * its API keys. The shared catalogue, which every account's runs fall back on, is written only with an
 * admin key that names no account. So no caller confined to one account can change what another runs.
 */
import {
  accountScope,
  SHARED_CATALOGUE,
  type AgentStore,
  type ApiKeyStore,
  type CredentialStore,
  type DeadLetterStore,
  type McpServerStore,
  type ToolStore,
  type RegistryScope,
} from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import type { FastifyInstance } from 'fastify';
import { CallerKind, requirePrivileged, type Caller } from '../auth.js';
import { Forbidden, Rejection, sendRejection } from '../errors.js';
import { registerAccountRoutes } from './admin-accounts.js';
import { registerAgentRoutes } from './admin-agents.js';
import { registerApiKeyRoutes } from './admin-api-keys.js';
import { registerCredentialRoutes } from './admin-credentials.js';
import { registerDeadLetterRoutes } from './admin-dead-letters.js';
import { registerMcpServerRoutes } from './admin-mcp-servers.js';
import { registerPluginImportRoute } from './admin-plugin-import.js';
import { registerToolRoutes } from './admin-plugins.js';
import type { TaskSubmitter } from '../task-submission.js';
import { registerWebhookRoutes, type WebhookRouteDeps } from '../webhooks/index.js';
import type { AuthenticateRequest } from './request-caller.js';

export const MANAGEMENT_PREFIX = '/v1/admin';

export interface ManagementRouteDeps {
  authenticate: AuthenticateRequest;
  agents: AgentStore;
  plugins: ToolStore;
  mcpServers: McpServerStore;
  credentials: CredentialStore;
  apiKeys: ApiKeyStore;
  /** The accounts of the API keys configured at start-up (listed by `GET /accounts`). */
  configuredAccounts: ReadonlySet<string>;
  deadLetters: DeadLetterStore;
  /** Webhook endpoints, their dead letters and the guarded sender (`/webhooks`). */
  webhooks: WebhookRouteDeps;
  /** Re-driven dead letters are submitted through it, like any task. */
  submitter: TaskSubmitter;
  /** Body limit of the OpenAPI plugin import (documents are larger than other bodies). */
  pluginImportBodyLimitBytes: number;
  /** Versions of each agent kept after a write (AGENT_VERSIONS_KEPT). */
  agentVersionsKept?: number;
  log: Logger;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The account the caller named, when it named one: it may only manage that account. */
    managedAccount?: string;
    /**
     * Where the caller's agent and plugin writes go: its account, or (admin naming none) the shared
     * catalogue. Set by the management plane's hook; routes read it with `registryScopeOf`.
     */
    registryScope?: RegistryScope;
  }
}

/** The account a management caller is confined to and the registry scope it writes, or why it may not. */
export function managementScope(caller: Caller): { account?: string; scope: RegistryScope } | Rejection {
  if (caller.accountId !== undefined) {
    return { account: caller.accountId, scope: accountScope(caller.accountId) };
  }
  if (caller.kind === CallerKind.ADMIN) return { scope: SHARED_CATALOGUE };
  return new Forbidden(
    'a trusted caller manages the account it names in x-account-id; the shared catalogue is written with an admin key only',
  );
}

export function registerManagementRoutes(app: FastifyInstance, deps: ManagementRouteDeps): void {
  void app.register(
    async (admin) => {
      admin.decorateRequest('managedAccount', undefined);
      admin.decorateRequest('registryScope', undefined);
      admin.addHook('onRequest', async (request, reply) => {
        const caller = await deps.authenticate(request);
        const privileged =
          caller instanceof Rejection ? caller : requirePrivileged(caller, 'the management plane');
        if (privileged instanceof Rejection) return sendRejection(reply, privileged);
        const scope = managementScope(privileged);
        if (scope instanceof Rejection) return sendRejection(reply, scope);
        if (scope.account !== undefined) request.managedAccount = scope.account;
        request.registryScope = scope.scope;
      });
      registerAgentRoutes(admin, deps.agents, {
        tools: deps.plugins,
        ...(deps.agentVersionsKept !== undefined && { keep: deps.agentVersionsKept }),
      });
      registerToolRoutes(admin, deps.plugins);
      registerPluginImportRoute(admin, {
        plugins: deps.plugins,
        bodyLimitBytes: deps.pluginImportBodyLimitBytes,
        log: deps.log,
      });
      registerMcpServerRoutes(admin, deps.mcpServers);
      registerCredentialRoutes(admin, deps.credentials);
      registerAccountRoutes(admin, {
        agents: deps.agents,
        plugins: deps.plugins,
        credentials: deps.credentials,
        configuredAccounts: deps.configuredAccounts,
      });
      registerApiKeyRoutes(admin, deps.apiKeys);
      registerDeadLetterRoutes(admin, {
        authenticate: deps.authenticate,
        deadLetters: deps.deadLetters,
        submitter: deps.submitter,
        log: deps.log,
      });
      registerWebhookRoutes(admin, deps.webhooks);
    },
    { prefix: MANAGEMENT_PREFIX },
  );
}
