/**
 * The gateway's management plane (`/v1/admin`) as a caller sees it: agents, tools (one by one in any
 * format the gateway recognises, or imported from an OpenAPI document), credentials — one user's, or an
 * account's for all its users (write-only: names can be listed, values never read back) — and API keys (registered and revoked: the gateway keeps
 * only digests, so it cannot list them) and dead letters (tasks that ran out of deliveries: list, show,
 * re-drive as a new task, drop), and webhook endpoints (the signing secret shown at creation and rotation
 * only; dead deliveries listed, re-driven, dropped). Needs an admin key, or a trusted caller naming its account;
 * scheduled runs (`/v1/schedules`: create, list, show, pause, resume, delete, run now) take an account API
 * key too, since a schedule submits only what its account could;
 * an admin naming an account (`x-account-id`, the `headers` option) manages that account only.
 * Every answer is validated against the protocol's schema.
 */
import type { WebhookDeadLetterView } from '@agentmesh/protocol';
import {
  AccountList,
  AgentDefinition,
  AgentDiff,
  AgentList,
  AgentVersionList,
  ApiKeyRegistrationReply,
  CredentialNameList,
  DeadLetterList,
  DeadLetterRedriveReply,
  DeadLetterView,
  importToolDefinition,
  RunScheduleReply,
  Schedule,
  ScheduleDetail,
  ScheduleList,
  ScheduleListItem,
  type CreateScheduleRequestInput,
  ScopedAgent,
  ScopedTool,
  ToolImportReply,
  ToolList,
  ToolWriteReply,
  WebhookDeadLetterList,
  WebhookEndpointList,
  WebhookEndpointView,
  WebhookEndpointWithSecret,
  WebhookTestResult,
  type AgentDefinitionInput,
  type TaskWebhookEvent,
} from '@agentmesh/protocol';
import { z } from 'zod';
import { MeshProtocolError } from './errors.js';
import { GatewayHttp, type GatewayHttpOptions } from './gateway-http.js';
import type { CallOptions } from './mesh-client.js';

const ADMIN = 'v1/admin';

/** How an OpenAPI document becomes tools (`POST /v1/admin/tools/import`); see the gateway's README. */
export interface ToolImportOptions extends CallOptions {
  /** operationIds or `METHOD /path`; every operation when absent. */
  operations?: string[];
  /** Replaces the document's servers. */
  baseUrl?: string;
  namePrefix?: string;
  credentialPrefix?: string;
  /** Answer what would be imported, store nothing. */
  dryRun?: boolean;
}

export interface ApiKeyRegistration {
  accountId: string;
  accountType?: string;
  label?: string;
  /** Bring your own key (24+ characters); the gateway generates one when absent. */
  apiKey?: string;
}

export class ManagementClient {
  private readonly http: GatewayHttp;

  constructor(options: GatewayHttpOptions) {
    this.http = new GatewayHttp(options);
  }

  async listAgents(options: CallOptions = {}): Promise<ScopedAgent[]> {
    const response = await this.http.send('GET', `${ADMIN}/agents`, { signal: options.signal });
    return (await this.http.json(response, AgentList, 'the agent list')).agents;
  }

  async getAgent(workflowId: string, options: CallOptions = {}): Promise<ScopedAgent> {
    const response = await this.http.send('GET', adminPath('agents', workflowId), { signal: options.signal });
    return this.http.json(response, ScopedAgent, `agent ${workflowId}`);
  }

  /** Creates or replaces the agent (in the caller's account, or the shared catalogue for an admin naming none). */
  async putAgent(agent: AgentDefinitionInput, options: CallOptions = {}): Promise<AgentDefinition> {
    const response = await this.http.send('PUT', adminPath('agents', agent.workflow_id), {
      body: agent,
      signal: options.signal,
    });
    return this.http.json(response, AgentDefinition, `the reply to storing agent ${agent.workflow_id}`);
  }

  /** The versions of the agent kept (newest first) and the one its name points at. */
  async listAgentVersions(workflowId: string, options: CallOptions = {}): Promise<AgentVersionList> {
    const response = await this.http.send('GET', `${adminPath('agents', workflowId)}/versions`, {
      signal: options.signal,
    });
    return this.http.json(response, AgentVersionList, `the versions of agent ${workflowId}`);
  }

  /** One kept version of the agent. */
  async getAgentVersion(
    workflowId: string,
    version: number,
    options: CallOptions = {},
  ): Promise<ScopedAgent> {
    const response = await this.http.send('GET', `${adminPath('agents', workflowId)}/versions/${version}`, {
      signal: options.signal,
    });
    return this.http.json(response, ScopedAgent, `agent ${workflowId}@${version}`);
  }

  /** What changed from version `from` to version `to` (JSON pointers; see the gateway's README). */
  async diffAgentVersions(
    workflowId: string,
    from: number,
    to: number,
    options: CallOptions = {},
  ): Promise<AgentDiff> {
    const query = new URLSearchParams({ from: String(from), to: String(to) });
    const response = await this.http.send('GET', `${adminPath('agents', workflowId)}/diff?${query}`, {
      signal: options.signal,
    });
    return this.http.json(response, AgentDiff, `the diff of agent ${workflowId} ${from}..${to}`);
  }

  /** Points the agent's name at a kept version (no new version is made); answers that version. */
  async rollbackAgent(workflowId: string, version: number, options: CallOptions = {}): Promise<ScopedAgent> {
    const response = await this.http.send('POST', `${adminPath('agents', workflowId)}/rollback`, {
      body: { version },
      signal: options.signal,
    });
    return this.http.json(response, ScopedAgent, `the rollback of agent ${workflowId} to ${version}`);
  }

  async deleteAgent(workflowId: string, options: CallOptions = {}): Promise<void> {
    await this.noContent(
      'DELETE',
      adminPath('agents', workflowId),
      undefined,
      options,
      `deleting agent ${workflowId}`,
    );
  }

  /** `tag` and `namespace` filter by seed 003 tags and by the namespace of the tool's id. */
  async listTools(options: CallOptions & { tag?: string; namespace?: string } = {}): Promise<ScopedTool[]> {
    const query = new URLSearchParams();
    if (options.tag !== undefined) query.set('tag', options.tag);
    if (options.namespace !== undefined) query.set('namespace', options.namespace);
    const search = query.size > 0 ? `?${query}` : '';
    const response = await this.http.send('GET', `${ADMIN}/tools${search}`, { signal: options.signal });
    return (await this.http.json(response, ToolList, 'the tool list')).tools;
  }

  async getTool(name: string, options: CallOptions = {}): Promise<ScopedTool> {
    const response = await this.http.send('GET', adminPath('tools', name), { signal: options.signal });
    return this.http.json(response, ScopedTool, `tool ${name}`);
  }

  /**
   * Creates or replaces a tool from a definition in any format the gateway takes (seed 000 plugin JSON, a
   * raw `sys_ai_plugin` row, a seed 001 tool, a seed 003 `*.tool.json`, a seed 004 dynamic tool, canonical).
   * Its name is read here with the protocol's importer, so a definition the gateway would refuse for its
   * format fails before anything is sent.
   */
  async putTool(definition: unknown, options: CallOptions = {}): Promise<ToolWriteReply> {
    const imported = importToolDefinition(definition);
    if (!imported.success) {
      throw imported.error === undefined
        ? new MeshProtocolError('not a tool definition of any format the gateway recognises')
        : MeshProtocolError.fromZod(`the tool definition (read as ${imported.format})`, imported.error);
    }
    const name = imported.tool.name;
    const response = await this.http.send('PUT', adminPath('tools', name), {
      body: definition,
      signal: options.signal,
    });
    return this.http.json(response, ToolWriteReply, `the reply to storing tool ${name}`);
  }

  async deleteTool(name: string, options: CallOptions = {}): Promise<void> {
    await this.noContent('DELETE', adminPath('tools', name), undefined, options, `deleting tool ${name}`);
  }

  /** One HTTP tool per operation of an OpenAPI 3.0/3.1 or Swagger 2.0 document (an object, or JSON/YAML text). */
  async importOpenApi(document: string | object, options: ToolImportOptions = {}): Promise<ToolImportReply> {
    const response = await this.http.send('POST', `${ADMIN}/tools/import`, {
      body: {
        document,
        ...(options.operations === undefined ? {} : { operations: options.operations }),
        ...(options.baseUrl === undefined ? {} : { base_url: options.baseUrl }),
        ...(options.namePrefix === undefined ? {} : { name_prefix: options.namePrefix }),
        ...(options.credentialPrefix === undefined ? {} : { credential_prefix: options.credentialPrefix }),
        ...(options.dryRun === undefined ? {} : { dry_run: options.dryRun }),
      },
      signal: options.signal,
    });
    return this.http.json(response, ToolImportReply, 'the reply to the OpenAPI import');
  }

  /** The names of a user's credentials (values are write-only). */
  async listCredentials(accountId: string, userId: string, options: CallOptions = {}): Promise<string[]> {
    const response = await this.http.send('GET', credentialsPath(accountId, userId), {
      signal: options.signal,
    });
    return (await this.http.json(response, CredentialNameList, 'the credential names')).names;
  }

  /** Stores a credential, encrypted at rest; the gateway never answers or logs its value. */
  async putCredential(
    accountId: string,
    userId: string,
    name: string,
    value: string,
    options: CallOptions = {},
  ): Promise<void> {
    const path = `${credentialsPath(accountId, userId)}/${encodeURIComponent(name)}`;
    await this.noContent('PUT', path, { value }, options, `storing credential ${name}`);
  }

  async deleteCredential(
    accountId: string,
    userId: string,
    name: string,
    options: CallOptions = {},
  ): Promise<void> {
    const path = `${credentialsPath(accountId, userId)}/${encodeURIComponent(name)}`;
    await this.noContent('DELETE', path, undefined, options, `deleting credential ${name}`);
  }

  /**
   * The accounts an admin may act for (`headers: {'x-account-id': …}`), as the gateway knows them: from its
   * configured API keys, accounts' own agents and tools, and stored credentials. Needs an admin key naming
   * no account.
   */
  async listAccounts(options: CallOptions = {}): Promise<string[]> {
    const response = await this.http.send('GET', `${ADMIN}/accounts`, { signal: options.signal });
    return (await this.http.json(response, AccountList, 'the account list')).accounts;
  }

  /** The names of the account-wide credentials, which serve every user of the account (values are write-only). */
  async accountCredentialNames(accountId: string, options: CallOptions = {}): Promise<string[]> {
    const response = await this.http.send('GET', accountCredentialsPath(accountId), {
      signal: options.signal,
    });
    return (await this.http.json(response, CredentialNameList, 'the account-wide credential names')).names;
  }

  /**
   * Stores a credential for every user of the account (a user's own credential of the same name wins at
   * assembly), encrypted at rest; the gateway never answers or logs its value.
   */
  async putAccountCredential(
    accountId: string,
    name: string,
    value: string,
    options: CallOptions = {},
  ): Promise<void> {
    const path = `${accountCredentialsPath(accountId)}/${encodeURIComponent(name)}`;
    await this.noContent('PUT', path, { value }, options, `storing account-wide credential ${name}`);
  }

  async deleteAccountCredential(accountId: string, name: string, options: CallOptions = {}): Promise<void> {
    const path = `${accountCredentialsPath(accountId)}/${encodeURIComponent(name)}`;
    await this.noContent('DELETE', path, undefined, options, `deleting account-wide credential ${name}`);
  }

  /** Registers an API key for an account; a generated key is in the answer's `api_key`, this once. */
  async createApiKey(
    registration: ApiKeyRegistration,
    options: CallOptions = {},
  ): Promise<ApiKeyRegistrationReply> {
    const response = await this.http.send('POST', `${ADMIN}/api-keys`, {
      body: {
        account_id: registration.accountId,
        ...(registration.accountType === undefined ? {} : { account_type: registration.accountType }),
        ...(registration.label === undefined ? {} : { label: registration.label }),
        ...(registration.apiKey === undefined ? {} : { api_key: registration.apiKey }),
      },
      signal: options.signal,
    });
    return this.http.json(response, ApiKeyRegistrationReply, 'the reply to registering an API key');
  }

  async revokeApiKey(apiKey: string, options: CallOptions = {}): Promise<void> {
    await this.noContent(
      'POST',
      `${ADMIN}/api-keys/revoke`,
      { api_key: apiKey },
      options,
      'revoking an API key',
    );
  }

  /** The dead letters the caller may see (its account's; every account's for an admin naming none), newest first. */
  async listDeadLetters(
    options: CallOptions & { workflowId?: string; limit?: number } = {},
  ): Promise<DeadLetterView[]> {
    const query = new URLSearchParams();
    if (options.workflowId !== undefined) query.set('workflow_id', options.workflowId);
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    const search = query.size > 0 ? `?${query.toString()}` : '';
    const response = await this.http.send('GET', `${ADMIN}/dead-letters${search}`, {
      signal: options.signal,
    });
    return (await this.http.json(response, DeadLetterList, 'the dead letter list')).dead_letters;
  }

  async getDeadLetter(traceId: string, options: CallOptions = {}): Promise<DeadLetterView> {
    const response = await this.http.send('GET', adminPath('dead-letters', traceId), {
      signal: options.signal,
    });
    return this.http.json(response, DeadLetterView, `the dead letter of ${traceId}`);
  }

  /** Submits the dead task's original request again as a new task; answers the new task's trace id. */
  async redriveDeadLetter(traceId: string, options: CallOptions = {}): Promise<DeadLetterRedriveReply> {
    const response = await this.http.send('POST', `${adminPath('dead-letters', traceId)}/redrive`, {
      signal: options.signal,
    });
    return this.http.json(response, DeadLetterRedriveReply, `the re-drive of ${traceId}`);
  }

  async dropDeadLetter(traceId: string, options: CallOptions = {}): Promise<void> {
    await this.noContent(
      'DELETE',
      adminPath('dead-letters', traceId),
      undefined,
      options,
      `dropping the dead letter of ${traceId}`,
    );
  }

  /** The account's schedules, each with its next fire time. */
  async listSchedules(options: CallOptions = {}): Promise<ScheduleListItem[]> {
    const response = await this.http.send('GET', SCHEDULES, { signal: options.signal });
    return (await this.http.json(response, ScheduleList, 'the schedule list')).schedules;
  }

  /** A schedule with its next `next` fire times and its last `runs` firings (their tasks' statuses). */
  async getSchedule(
    scheduleId: string,
    options: CallOptions & { next?: number; runs?: number } = {},
  ): Promise<ScheduleDetail> {
    const query = new URLSearchParams();
    if (options.next !== undefined) query.set('next', String(options.next));
    if (options.runs !== undefined) query.set('runs', String(options.runs));
    const search = query.size > 0 ? `?${query.toString()}` : '';
    const response = await this.http.send('GET', `${schedulePath(scheduleId)}${search}`, {
      signal: options.signal,
    });
    return this.http.json(response, ScheduleDetail, `schedule ${scheduleId}`);
  }

  async createSchedule(
    schedule: CreateScheduleRequestInput,
    options: CallOptions = {},
  ): Promise<ScheduleListItem> {
    const response = await this.http.send('POST', SCHEDULES, { body: schedule, signal: options.signal });
    return this.http.json(response, ScheduleListItem, 'the new schedule');
  }

  async pauseSchedule(scheduleId: string, options: CallOptions = {}): Promise<Schedule> {
    const response = await this.http.send('POST', `${schedulePath(scheduleId)}/pause`, {
      signal: options.signal,
    });
    return this.http.json(response, Schedule, `pausing schedule ${scheduleId}`);
  }

  /** Resumes a paused schedule; fire times count from now (the paused stretch is not caught up). */
  async resumeSchedule(scheduleId: string, options: CallOptions = {}): Promise<Schedule> {
    const response = await this.http.send('POST', `${schedulePath(scheduleId)}/resume`, {
      signal: options.signal,
    });
    return this.http.json(response, Schedule, `resuming schedule ${scheduleId}`);
  }

  async deleteSchedule(scheduleId: string, options: CallOptions = {}): Promise<void> {
    await this.noContent(
      'DELETE',
      schedulePath(scheduleId),
      undefined,
      options,
      `deleting schedule ${scheduleId}`,
    );
  }

  /** Fires the schedule now; the same `idempotencyKey` again answers the first run's task. */
  async runSchedule(
    scheduleId: string,
    options: CallOptions & { idempotencyKey?: string } = {},
  ): Promise<RunScheduleReply> {
    const response = await this.http.send('POST', `${schedulePath(scheduleId)}/run`, {
      ...(options.idempotencyKey === undefined ? {} : { body: { idempotency_key: options.idempotencyKey } }),
      signal: options.signal,
    });
    return this.http.json(response, RunScheduleReply, `running schedule ${scheduleId}`);
  }

  /** Registers a webhook endpoint of the caller's account; the answer holds its signing secret, shown this once. */
  async createWebhook(
    endpoint: { url: string; events?: TaskWebhookEvent[]; description?: string },
    options: CallOptions = {},
  ): Promise<WebhookEndpointWithSecret> {
    const response = await this.http.send('POST', `${ADMIN}/webhooks`, {
      body: endpoint,
      signal: options.signal,
    });
    return this.http.json(response, WebhookEndpointWithSecret, 'the new webhook endpoint');
  }

  async listWebhooks(options: CallOptions = {}): Promise<WebhookEndpointView[]> {
    const response = await this.http.send('GET', `${ADMIN}/webhooks`, { signal: options.signal });
    return (await this.http.json(response, WebhookEndpointList, 'the webhook list')).webhooks;
  }

  async getWebhook(id: string, options: CallOptions = {}): Promise<WebhookEndpointView> {
    const response = await this.http.send('GET', adminPath('webhooks', id), { signal: options.signal });
    return this.http.json(response, WebhookEndpointView, `webhook ${id}`);
  }

  async deleteWebhook(id: string, options: CallOptions = {}): Promise<void> {
    await this.noContent('DELETE', adminPath('webhooks', id), undefined, options, `deleting webhook ${id}`);
  }

  /** A new signing secret, shown this once; the old one keeps signing for `previousValidForS` (default a day). */
  async rotateWebhookSecret(
    id: string,
    options: CallOptions & { previousValidForS?: number } = {},
  ): Promise<WebhookEndpointWithSecret> {
    const response = await this.http.send('POST', `${adminPath('webhooks', id)}/rotate-secret`, {
      body:
        options.previousValidForS === undefined ? {} : { previous_valid_for_s: options.previousValidForS },
      signal: options.signal,
    });
    return this.http.json(response, WebhookEndpointWithSecret, `the new secret of webhook ${id}`);
  }

  /** Sends one signed `webhook.test` to the endpoint now and answers how it went (not retried). */
  async testWebhook(id: string, options: CallOptions = {}): Promise<WebhookTestResult> {
    const response = await this.http.send('POST', `${adminPath('webhooks', id)}/test`, {
      signal: options.signal,
    });
    return this.http.json(response, WebhookTestResult, `the test of webhook ${id}`);
  }

  async listWebhookDeadLetters(options: CallOptions = {}): Promise<WebhookDeadLetterView[]> {
    const response = await this.http.send('GET', `${ADMIN}/webhooks/dead-letters`, {
      signal: options.signal,
    });
    return (await this.http.json(response, WebhookDeadLetterList, 'the webhook dead letters')).dead_letters;
  }

  /** Queues a dead delivery again (same webhook-id, a fresh retry schedule). */
  async redriveWebhookDeadLetter(webhookId: string, options: CallOptions = {}): Promise<void> {
    const response = await this.http.send(
      'POST',
      `${adminPath('webhooks/dead-letters', webhookId)}/redrive`,
      {
        signal: options.signal,
      },
    );
    await this.http.json(response, WebhookRedriveReply, `the re-drive of ${webhookId}`);
  }

  async dropWebhookDeadLetter(webhookId: string, options: CallOptions = {}): Promise<void> {
    await this.noContent(
      'DELETE',
      adminPath('webhooks/dead-letters', webhookId),
      undefined,
      options,
      `dropping the dead delivery ${webhookId}`,
    );
  }

  private async noContent(
    method: string,
    path: string,
    body: unknown,
    options: CallOptions,
    what: string,
  ): Promise<void> {
    const response = await this.http.send(method, path, {
      ...(body === undefined ? {} : { body }),
      signal: options.signal,
    });
    if (!response.ok) throw await this.http.failure(response, what);
    await response.body?.cancel();
  }
}

const SCHEDULES = 'v1/schedules';
const schedulePath = (scheduleId: string): string => `${SCHEDULES}/${encodeURIComponent(scheduleId)}`;
const WebhookRedriveReply = z.object({ webhook_id: z.string(), round: z.int() });

const adminPath = (kind: string, name: string): string => `${ADMIN}/${kind}/${encodeURIComponent(name)}`;
const accountCredentialsPath = (accountId: string): string =>
  `${ADMIN}/accounts/${encodeURIComponent(accountId)}/credentials`;
const credentialsPath = (accountId: string, userId: string): string =>
  `${ADMIN}/accounts/${encodeURIComponent(accountId)}/users/${encodeURIComponent(userId)}/credentials`;
