/**
 * An agent's `sub_agents` as tools: each listed agent, resolved like the task's own agent (the task's
 * account first, then the shared catalogue), becomes an AGENT tool `agent_<workflow_id>` (function-name
 * safe) taking `{input}`. The executor runs a call as a sub-task of that agent; the description the model
 * reads is the sub-agent's own.
 */
import { toFunctionName, ToolType, type AgentDefinition, type AgentTool } from '@agentmesh/protocol';
import type { RegistryScope } from '@agentmesh/bus';
import { SubAgentUnavailableError } from './assembly-errors.js';
import type { AgentLookup } from './task-assembler.js';

/** The tool name the model calls a sub-agent by. */
export function subAgentToolName(workflowId: string): string {
  return toFunctionName(`agent_${workflowId}`);
}

/**
 * The AGENT tools of the agent's sub-agents, in the order it lists them, each once. Fails naming every
 * sub-agent that does not exist and every one whose tool name a bound tool (`taken`) already has.
 */
export async function bindSubAgents(
  scope: RegistryScope,
  agent: AgentDefinition,
  lookup: AgentLookup,
  taken: ReadonlySet<string>,
): Promise<{ ok: true; tools: AgentTool[] } | { ok: false; failure: SubAgentUnavailableError }> {
  const ids = [...new Set(agent.sub_agents ?? [])];
  if (ids.length === 0) return { ok: true, tools: [] };
  const found = await Promise.all(
    ids.map(async (id) => ({ id, sub: (await lookup.resolve(scope, id))?.agent })),
  );
  const missing = found.filter(({ sub }) => sub === undefined).map(({ id }) => id);
  const clashing = ids.map(subAgentToolName).filter((name) => taken.has(name));
  if (missing.length > 0 || clashing.length > 0) {
    return { ok: false, failure: new SubAgentUnavailableError(agent.workflow_id, missing, clashing) };
  }
  return { ok: true, tools: found.map(({ id, sub }) => agentTool(id, sub as AgentDefinition)) };
}

function agentTool(workflowId: string, sub: AgentDefinition): AgentTool {
  const about = sub.description ?? sub.name;
  return {
    type: ToolType.AGENT,
    name: subAgentToolName(workflowId),
    description:
      about === undefined || about.trim() === ''
        ? `Asks the agent "${workflowId}" and answers with its final reply.`
        : about,
    parameters: {
      type: 'object',
      properties: {
        input: {
          type: 'string',
          description: `What to ask the agent "${workflowId}": the whole request, self-contained (it sees nothing else of this conversation).`,
        },
      },
      required: ['input'],
    },
    workflow_id: workflowId,
  };
}
