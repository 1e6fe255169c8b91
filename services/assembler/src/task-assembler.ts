/**
 * Turns a received task into the task an executor runs: the agent's model (without its key), only the
 * tools the agent is bound to, the agent's limits, its system prompt in front of the messages, and a vault
 * holding exactly the credentials those tools and the model need, sealed for the executors and bound to
 * the whole assembled task (account, user, trace, workflow, input, limits, model endpoint, every tool's
 * target and auth mapping), so the vault opens in no other task. Expected failures come back as an {@link AssemblyError}, never thrown.
 * Pre-assembled tasks (sealed by the gateway) pass through unchanged.
 *
 * An agent's `sub_agents` become AGENT tools (sub-agent-tools.ts), resolved like the agent itself.
 *
 * Tenancy: the agent and every bound tool are resolved in the task's own account first and in the shared
 * catalogue (written by admins only) behind it, so a task never runs a definition another account can
 * change.
 */
import { createHash } from 'node:crypto';
import {
  AssembledModelConfig,
  AssembledTask,
  BoundTask,
  agentModels,
  canonicalJson,
  modelApiKeyVaultEntry,
  mcpServerConnection,
  mcpServerCredentials,
  requiredCredentials,
  TaskLimits,
  type AgentDefinition,
  type AgentVersionStamp,
  type AssembledRuntimeConfig,
  type BoundToolDigests,
  type ChatMessage,
  type McpServerConnection,
  type McpServerDefinition,
  type ReceivedTask,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { accountScope, type RegistryScope } from '@agentmesh/bus';
import { sealTask, type SealFor } from '@agentmesh/vault';
import { withBindingApprovals } from './tool-approvals.js';
import {
  AgentNotFoundError,
  AgentVersionNotFoundError,
  AgentVersionToolsChangedError,
  BoundToolUnavailableError,
  CredentialsMissingError,
  McpServerUnavailableError,
  ThreadNotFoundError,
  type AssemblyError,
} from './assembly-errors.js';
import type { ThreadHistorySource } from './thread-history.js';
import { bindSubAgents } from './sub-agent-tools.js';

/** Finds the agent an account's task runs: the account's own, else the shared catalogue's. */
export interface AgentLookup {
  /** The current version; `version` absent only where a lookup knows no versions (tests' fixtures). */
  resolve(
    from: RegistryScope,
    workflowId: string,
  ): Promise<{ agent: AgentDefinition; version?: AgentVersionStamp } | undefined>;
  /**
   * One version of the agent `from` resolves under `workflowId` (found like `resolve`, then that version in
   * the same scope): undefined when there is no such agent; `agent` undefined when it lacks that version.
   */
  resolveVersion?(
    from: RegistryScope,
    workflowId: string,
    version: number,
  ): Promise<
    { agent?: AgentDefinition; version?: AgentVersionStamp; toolDigests?: BoundToolDigests } | undefined
  >;
}

/** Finds the tool an account's task gets under a name: the account's own, else the shared catalogue's. */
export interface ToolLookup {
  resolve(from: RegistryScope, name: string): Promise<ToolDefinition | undefined>;
}

/** Finds the MCP server an account's agent binds: the account's own definition, else the shared one. */
export interface McpServerLookup {
  resolve(from: RegistryScope, name: string): Promise<McpServerDefinition | undefined>;
}

/** The credentials a user's task gets: the user's own, else the account's (see @agentmesh/bus). */
export interface CredentialResolver {
  resolve(
    accountId: string,
    userId: string,
    names: readonly string[],
  ): Promise<{ values: Record<string, string>; missing: string[] }>;
}

export interface AssemblySources {
  agents: AgentLookup;
  tools: ToolLookup;
  /** Absent: agents binding MCP servers fail assembly (NOT_FOUND). */
  mcpServers?: McpServerLookup;
  credentials: CredentialResolver;
  /** The executors' vault key the task is sealed for. */
  sealFor: SealFor;
  /** Threads' histories; absent: a task naming a thread fails assembly (NOT_FOUND). */
  threads?: ThreadHistorySource;
}

export type AssemblyOutcome = { ok: true; task: AssembledTask } | { ok: false; failure: AssemblyError };

export async function assembleTask(
  received: ReceivedTask,
  sources: AssemblySources,
): Promise<AssemblyOutcome> {
  if (received.runtime_config) return { ok: true, task: passThrough(received, received.runtime_config) };
  const { task_meta: meta } = received;

  const scope = accountScope(meta.account_id);
  const pinned = meta.agent_version;
  const found =
    pinned === undefined
      ? await sources.agents.resolve(scope, meta.workflow_id)
      : await sources.agents.resolveVersion?.(scope, meta.workflow_id, pinned);
  if (!found) return { ok: false, failure: new AgentNotFoundError(meta.workflow_id) };
  const { agent, version } = found;
  if (!agent) return { ok: false, failure: new AgentVersionNotFoundError(meta.workflow_id, pinned ?? 0) };
  // The version it runs goes into task_meta, so into the vault's binding, its status and first event.
  let stamped: ReceivedTask = version
    ? { ...received, task_meta: { ...meta, agent_version: version.version, agent_digest: version.digest } }
    : received;

  const bound = await bindTools(scope, agent, sources.tools);
  if (!bound.ok) return bound;
  // A pinned version runs only the tools it recorded: one changed since would make it another run.
  const recorded = pinned === undefined || !('toolDigests' in found) ? undefined : found.toolDigests;
  if (recorded !== undefined) {
    const changed = changedTools(recorded, bound.raw);
    if (changed.length > 0) {
      return {
        ok: false,
        failure: new AgentVersionToolsChangedError(meta.workflow_id, pinned ?? 0, changed),
      };
    }
  }
  // What tools it runs is recorded beside the version (task_meta → its status record and the vault binding).
  if (bound.raw.length > 0) {
    const toolDigests = Object.fromEntries(bound.raw.map(({ name, tool }) => [name, toolDigest(tool)]));
    stamped = { ...stamped, task_meta: { ...stamped.task_meta, tool_digests: toolDigests } };
  }
  const subAgents = await bindSubAgents(
    scope,
    agent,
    sources.agents,
    new Set(bound.tools.map((tool) => tool.name)),
  );
  if (!subAgents.ok) return subAgents;
  const servers = await bindMcpServers(scope, agent, sources.mcpServers);
  if (!servers.ok) return servers;

  const names = credentialNames(agent, bound.tools, servers.servers);
  const resolved = await sources.credentials.resolve(meta.account_id, meta.user_id, names);
  if (resolved.missing.length > 0)
    return {
      ok: false,
      failure: new CredentialsMissingError(resolved.missing, meta.account_id, meta.user_id),
    };

  // A thread's history goes into the input before sealing: the vault is bound to it like to the rest.
  let withThread = stamped;
  if (meta.thread !== undefined) {
    if (sources.threads === undefined)
      return { ok: false, failure: new ThreadNotFoundError(meta.thread.thread_id) };
    // The history's summary (if compaction needs one) is asked of the first model, with its key.
    const modelKeyName = agentModels(agent)[0]?.api_key_credential;
    const loaded = await sources.threads.withHistory(
      stamped,
      agent,
      modelKeyName === undefined ? undefined : resolved.values[modelKeyName],
    );
    if (!loaded.ok) return loaded;
    withThread = loaded.task;
  }

  return {
    ok: true,
    task: buildAssembledTask(
      withThread,
      agent,
      [...bound.tools, ...subAgents.tools],
      resolved.values,
      sources.sealFor,
      servers.servers,
    ),
  };
}

/** A pre-assembled task already holds a sealed runtime_config; only the limits' defaults are filled in. */
function passThrough(received: ReceivedTask, runtimeConfig: AssembledRuntimeConfig): AssembledTask {
  return AssembledTask.parse({
    task_meta: received.task_meta,
    input: received.input,
    runtime_config: runtimeConfig,
    limits: received.limits ?? TaskLimits.parse({}),
  });
}

/** The agent's bound tools in the order it lists them, each once; every unavailable one is named. */
export async function bindTools(
  scope: RegistryScope,
  agent: AgentDefinition,
  lookup: ToolLookup,
): Promise<
  | { ok: true; tools: ToolDefinition[]; raw: Array<{ name: string; tool: ToolDefinition }> }
  | { ok: false; failure: BoundToolUnavailableError }
> {
  const names = [...new Set(agent.tools)];
  const found = await Promise.all(
    names.map(async (name) => ({ name, tool: await lookup.resolve(scope, name) })),
  );
  const missing = found.filter(({ tool }) => tool === undefined).map(({ name }) => name);
  const disabled = found.filter(({ tool }) => tool !== undefined && isDisabled(tool)).map(({ name }) => name);
  if (missing.length > 0 || disabled.length > 0) {
    return { ok: false, failure: new BoundToolUnavailableError(agent.workflow_id, missing, disabled) };
  }
  const tools = found.map(({ tool }) => tool as ToolDefinition);
  return {
    ok: true,
    tools: withBindingApprovals(tools, agent.tool_approvals),
    raw: found as Array<{ name: string; tool: ToolDefinition }>,
  };
}

/** The digest a version records for a bound tool: `sha256:` of the tool's canonical JSON, as stored. */
export function toolDigest(tool: ToolDefinition): string {
  return `sha256:${createHash('sha256').update(canonicalJson(tool)).digest('hex')}`;
}

/**
 * The names whose tool differs from what the version recorded: a digest that is not the current tool's,
 * and a name the version bound that it recorded nothing for. A name recorded as null (no tool answered
 * when the version was written) is refused too, since a tool has answered since.
 */
export function changedTools(
  recorded: BoundToolDigests,
  bound: ReadonlyArray<{ name: string; tool: ToolDefinition }>,
): string[] {
  return bound
    .filter(({ name, tool }) => recorded[name] !== toolDigest(tool))
    .map(({ name }) => name)
    .sort();
}

/**
 * The MCP servers the agent binds, resolved in the task's account then the shared catalogue, as the task
 * carries them. Their tools are listed by the executor that runs the task (see the executor's `tools/mcp/`):
 * it holds the SSRF guard and the script sandbox, so the assembler, which can read every account's
 * credentials, never connects to a URL or starts a command an account defined.
 */
export async function bindMcpServers(
  scope: RegistryScope,
  agent: AgentDefinition,
  lookup: McpServerLookup | undefined,
): Promise<{ ok: true; servers: McpServerConnection[] } | { ok: false; failure: McpServerUnavailableError }> {
  const names = [...new Set(agent.mcp_servers ?? [])];
  if (names.length === 0) return { ok: true, servers: [] };
  const found = await Promise.all(
    names.map(async (name) => ({ name, server: await lookup?.resolve(scope, name) })),
  );
  const missing = found.filter(({ server }) => server === undefined).map(({ name }) => name);
  if (missing.length > 0) {
    return { ok: false, failure: new McpServerUnavailableError(agent.workflow_id, missing) };
  }
  return { ok: true, servers: found.map(({ server }) => mcpServerConnection(server as McpServerDefinition)) };
}

function isDisabled(tool: ToolDefinition): boolean {
  return tool.type === 'HTTP' && tool.status === 'disabled';
}

/** Every credential the task needs: each bound tool's and MCP server's, and the model's key. */
export function credentialNames(
  agent: AgentDefinition,
  tools: readonly ToolDefinition[],
  servers: readonly McpServerConnection[] = [],
): string[] {
  const names = new Set([...toolCredentialNames(tools, servers)]);
  for (const model of agentModels(agent)) {
    if (model.api_key_credential) names.add(model.api_key_credential);
  }
  return [...names].sort();
}

export function buildAssembledTask(
  received: ReceivedTask,
  agent: AgentDefinition,
  tools: ToolDefinition[],
  credentials: Readonly<Record<string, string>>,
  sealFor: SealFor,
  mcpServers: readonly McpServerConnection[] = [],
): AssembledTask {
  const { task_meta: meta } = received;
  const [first, ...fallbacks] = agentModels(agent);
  if (first === undefined) throw new Error('an agent has at least one model');
  const toolCredentials = toolCredentialNames(tools, mcpServers);
  const vault: Record<string, string> = {};
  for (const name of toolCredentials) {
    const value = credentials[name];
    if (value !== undefined) vault[name] = value;
  }
  // Each model's key under its own entry: a fallback may be another provider with another key.
  const models = [first, ...fallbacks].map(({ api_key_credential: keyName, ...model }, index) => {
    const key = keyName === undefined ? undefined : credentials[keyName];
    if (key !== undefined) vault[modelApiKeyVaultEntry(index)] = key;
    return AssembledModelConfig.parse(model);
  });
  const outputSchema = received.output_schema ?? agent.output_schema;

  // Parsed (strictly) before sealing, so the vault is bound to exactly what the executors will parse, and
  // a bug that let a secret or a stray field in fails here, not on the bus.
  const bound = BoundTask.parse({
    task_meta: meta,
    input: { ...received.input, messages: withSystemPrompt(agent.system_prompt, received.input.messages) },
    runtime_config: {
      model: models[0],
      ...(models.length > 1 ? { fallback_models: models.slice(1) } : {}),
      ...(outputSchema === undefined ? {} : { output_schema: outputSchema }),
      tools,
      ...(agent.dynamic_tool_sources?.length ? { dynamic_tool_sources: agent.dynamic_tool_sources } : {}),
      ...(mcpServers.length > 0 ? { mcp_servers: mcpServers } : {}),
    },
    limits: TaskLimits.parse({
      max_steps: agent.max_steps,
      deadline_ms: agent.deadline_ms,
      ...taskBudgetOf(agent, received.limits),
    }),
  });
  return sealTask(bound, vault, sealFor);
}

/** The task's token and cost budget: the agent's and the submitted one, the smaller where both are set. */
export function taskBudgetOf(
  agent: Pick<AgentDefinition, 'max_total_tokens' | 'max_cost_usd'>,
  submitted: Pick<TaskLimits, 'max_total_tokens' | 'max_cost_usd'> | undefined,
): Pick<TaskLimits, 'max_total_tokens' | 'max_cost_usd'> {
  const tokens = smaller(agent.max_total_tokens, submitted?.max_total_tokens);
  const cost = smaller(agent.max_cost_usd, submitted?.max_cost_usd);
  return {
    ...(tokens === undefined ? {} : { max_total_tokens: tokens }),
    ...(cost === undefined ? {} : { max_cost_usd: cost }),
  };
}

function smaller(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** The vault entries the tools and MCP servers read (each server's go to that server only). */
function toolCredentialNames(
  tools: readonly ToolDefinition[],
  servers: readonly McpServerConnection[],
): Set<string> {
  return new Set([
    ...tools.flatMap((tool) => requiredCredentials(tool)),
    ...servers.flatMap((server) => mcpServerCredentials(server)),
  ]);
}

function withSystemPrompt(prompt: string | undefined, messages: ChatMessage[]): ChatMessage[] {
  if (prompt === undefined || prompt.trim() === '') return messages;
  return [{ role: 'system', content: prompt }, ...messages];
}
