/**
 * The agents a caller may run, as MCP tools: one tool `run_<workflow_id>` per agent visible to the
 * caller's account (its own, then the shared catalogue's behind it; never another account's), described
 * by the agent, taking `{message, variables?, user?}`. Tool names stay legal MCP names (1-128 characters
 * of A-Z, a-z, 0-9, `_`, `-`, `.`): a workflow id is already made of those, and one too long for the
 * `run_` prefix is cut and suffixed with a digest of the whole id, so two long ids never share a name.
 */
import { createHash } from 'node:crypto';
import { AgentVersionNumber, UserId, WorkflowId, type AgentDefinition } from '@agentmesh/protocol';
import { accountScope, type AgentStore } from '@agentmesh/bus';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export const AGENT_TOOL_PREFIX = 'run_';
/** The longest tool name MCP clients are asked to accept (spec 2025-11-25, "Tool names"). */
export const MAX_TOOL_NAME_LENGTH = 128;
const DIGEST_CHARS = 12;

/** The user a task runs for when the call names none (per-user credentials are looked up under it). */
export const DEFAULT_MCP_USER_ID = 'mcp';

export function agentToolName(workflowId: string): string {
  const name = `${AGENT_TOOL_PREFIX}${workflowId}`;
  if (name.length <= MAX_TOOL_NAME_LENGTH) return name;
  const digest = createHash('sha256').update(workflowId, 'utf8').digest('hex').slice(0, DIGEST_CHARS);
  return `${name.slice(0, MAX_TOOL_NAME_LENGTH - DIGEST_CHARS - 1)}_${digest}`;
}

/** What a call of an agent tool takes, as the MCP client sees it. */
export const AGENT_TOOL_INPUT_SCHEMA = {
  type: 'object',
  properties: {
    message: {
      type: 'string',
      minLength: 1,
      description: 'What to ask the agent: the user message of the task.',
    },
    variables: {
      type: 'object',
      additionalProperties: true,
      description: "Values the agent's prompts and tools read (the task's input.variables).",
    },
    user: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      description: `The user the task runs for (whose credentials its tools use); default "${DEFAULT_MCP_USER_ID}".`,
    },
    version: {
      type: 'integer',
      minimum: 1,
      description: "The agent version to run (see the agent's versions); default its current one.",
    },
  },
  required: ['message'],
  additionalProperties: false,
} as const;

export const AgentToolArguments = z.strictObject({
  message: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).optional(),
  user: UserId.optional(),
  version: AgentVersionNumber.optional(),
});
export type AgentToolArguments = z.infer<typeof AgentToolArguments>;

export function agentTool(agent: AgentDefinition): Tool {
  const title = agent.name ?? agent.workflow_id;
  return {
    name: agentToolName(agent.workflow_id),
    title,
    description: agent.description ?? `Runs the agent ${title} and answers with its final message.`,
    inputSchema: AGENT_TOOL_INPUT_SCHEMA as unknown as Tool['inputSchema'],
    annotations: { title, readOnlyHint: false, openWorldHint: true },
  };
}

/** Every agent the account may run, as tools, sorted by name. */
export async function listAgentTools(agents: AgentStore, accountId: string): Promise<Tool[]> {
  const visible = await agents.listVisible(accountScope(accountId));
  return visible.map(({ agent }) => agentTool(agent)).sort((a, b) => a.name.localeCompare(b.name));
}

/** The agent a tool name runs for the account, or undefined when it names none the account may run. */
export async function agentOfTool(
  agents: AgentStore,
  accountId: string,
  toolName: string,
): Promise<AgentDefinition | undefined> {
  if (!toolName.startsWith(AGENT_TOOL_PREFIX)) return undefined;
  const scope = accountScope(accountId);
  const workflowId = toolName.slice(AGENT_TOOL_PREFIX.length);
  if (WorkflowId.safeParse(workflowId).success && agentToolName(workflowId) === toolName) {
    const found = await agents.resolve(scope, workflowId);
    if (found) return found.agent;
  }
  // A name at the limit may stand for a longer id, cut and digested: only a listing can tell which.
  if (toolName.length < MAX_TOOL_NAME_LENGTH) return undefined;
  const visible = await agents.listVisible(scope);
  return visible.find(({ agent }) => agentToolName(agent.workflow_id) === toolName)?.agent;
}
