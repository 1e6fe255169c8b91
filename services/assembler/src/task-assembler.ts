/**
 * Turns a received task into the task an executor runs: the agent's model (without its key), only the
 * tools the agent is bound to, the agent's limits, its system prompt in front of the messages, and a vault
 * holding exactly the credentials those tools and the model need, sealed for the executors and bound to
 * the whole assembled task (account, user, trace, workflow, input, limits, model endpoint, every tool's
 * target and auth mapping), so the vault opens in no other task. Expected failures come back as an {@link AssemblyError}, never thrown.
 * Pre-assembled tasks (sealed by the gateway) pass through unchanged.
 *
 * Tenancy: the agent and every bound tool are resolved in the task's own account first and in the shared
 * catalogue (written by admins only) behind it, so a task never runs a definition another account can
 * change.
 */
import {
  AssembledModelConfig,
  AssembledTask,
  BoundTask,
  MODEL_API_KEY_VAULT_ENTRY,
  requiredCredentials,
  TaskLimits,
  type AgentDefinition,
  type AssembledRuntimeConfig,
  type ChatMessage,
  type ReceivedTask,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { accountScope, type RegistryScope } from '@agentmesh/bus';
import { sealTask, type SealFor } from '@agentmesh/vault';
import {
  AgentNotFoundError,
  BoundToolUnavailableError,
  CredentialsMissingError,
  type AssemblyError,
} from './assembly-errors.js';

/** Finds the agent an account's task runs: the account's own, else the shared catalogue's. */
export interface AgentLookup {
  resolve(from: RegistryScope, workflowId: string): Promise<{ agent: AgentDefinition } | undefined>;
}

/** Finds the tool an account's task gets under a name: the account's own, else the shared catalogue's. */
export interface ToolLookup {
  resolve(from: RegistryScope, name: string): Promise<ToolDefinition | undefined>;
}

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
  credentials: CredentialResolver;
  /** The executors' vault key the task is sealed for. */
  sealFor: SealFor;
}

export type AssemblyOutcome = { ok: true; task: AssembledTask } | { ok: false; failure: AssemblyError };

export async function assembleTask(
  received: ReceivedTask,
  sources: AssemblySources,
): Promise<AssemblyOutcome> {
  if (received.runtime_config) return { ok: true, task: passThrough(received, received.runtime_config) };
  const { task_meta: meta } = received;

  const scope = accountScope(meta.account_id);
  const agent = (await sources.agents.resolve(scope, meta.workflow_id))?.agent;
  if (!agent) return { ok: false, failure: new AgentNotFoundError(meta.workflow_id) };

  const bound = await bindTools(scope, agent, sources.tools);
  if (!bound.ok) return bound;

  const names = credentialNames(agent, bound.tools);
  const resolved = await sources.credentials.resolve(meta.account_id, meta.user_id, names);
  if (resolved.missing.length > 0)
    return { ok: false, failure: new CredentialsMissingError(resolved.missing) };

  return {
    ok: true,
    task: buildAssembledTask(received, agent, bound.tools, resolved.values, sources.sealFor),
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
): Promise<{ ok: true; tools: ToolDefinition[] } | { ok: false; failure: BoundToolUnavailableError }> {
  const names = [...new Set(agent.tools)];
  const found = await Promise.all(
    names.map(async (name) => ({ name, tool: await lookup.resolve(scope, name) })),
  );
  const missing = found.filter(({ tool }) => tool === undefined).map(({ name }) => name);
  const disabled = found.filter(({ tool }) => tool !== undefined && isDisabled(tool)).map(({ name }) => name);
  if (missing.length > 0 || disabled.length > 0) {
    return { ok: false, failure: new BoundToolUnavailableError(agent.workflow_id, missing, disabled) };
  }
  return { ok: true, tools: found.map(({ tool }) => tool as ToolDefinition) };
}

function isDisabled(tool: ToolDefinition): boolean {
  return tool.type === 'HTTP' && tool.status === 'disabled';
}

/** Every credential the task needs: each bound tool's required credentials and the model's key. */
export function credentialNames(agent: AgentDefinition, tools: readonly ToolDefinition[]): string[] {
  const names = new Set(tools.flatMap((tool) => requiredCredentials(tool)));
  if (agent.model.api_key_credential) names.add(agent.model.api_key_credential);
  return [...names].sort();
}

export function buildAssembledTask(
  received: ReceivedTask,
  agent: AgentDefinition,
  tools: ToolDefinition[],
  credentials: Readonly<Record<string, string>>,
  sealFor: SealFor,
): AssembledTask {
  const { task_meta: meta } = received;
  const { api_key_credential: modelKeyName, ...model } = agent.model;
  const toolCredentials = new Set(tools.flatMap((tool) => requiredCredentials(tool)));
  const vault: Record<string, string> = {};
  for (const name of toolCredentials) {
    const value = credentials[name];
    if (value !== undefined) vault[name] = value;
  }
  const modelKey = modelKeyName === undefined ? undefined : credentials[modelKeyName];
  if (modelKey !== undefined) vault[MODEL_API_KEY_VAULT_ENTRY] = modelKey;

  // Parsed (strictly) before sealing, so the vault is bound to exactly what the executors will parse, and
  // a bug that let a secret or a stray field in fails here, not on the bus.
  const bound = BoundTask.parse({
    task_meta: meta,
    input: { ...received.input, messages: withSystemPrompt(agent.system_prompt, received.input.messages) },
    runtime_config: {
      model: AssembledModelConfig.parse(model),
      tools,
      ...(agent.dynamic_tool_sources?.length ? { dynamic_tool_sources: agent.dynamic_tool_sources } : {}),
    },
    limits: TaskLimits.parse({ max_steps: agent.max_steps, deadline_ms: agent.deadline_ms }),
  });
  return sealTask(bound, vault, sealFor);
}

function withSystemPrompt(prompt: string | undefined, messages: ChatMessage[]): ChatMessage[] {
  if (prompt === undefined || prompt.trim() === '') return messages;
  return [{ role: 'system', content: prompt }, ...messages];
}
