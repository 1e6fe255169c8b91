/**
 * Agent Cards: what an A2A client reads before it calls an agent. One card per agent the caller's account
 * may run (its own and the shared catalogue's), served at `/a2a/{workflow_id}/.well-known/agent-card.json`:
 * the agent's name and description, one skill per bound tool (its description from the tool registry),
 * sub-agent and MCP server, the JSON-RPC interface at `/a2a/{workflow_id}` (protocol 1.0 and 0.3), bearer
 * auth, streaming. The account's catalogue card (`/.well-known/agent-card.json` without `?agent=`) lists
 * every agent as a skill; an agent's own card is where a client sends messages.
 *
 * Cards are built for an authenticated account only (see the gateway README): which agents an account has,
 * and what they can do, is the account's own business.
 */
import { AGENT_CARD_PATH, type AgentCard, type AgentInterface, type AgentSkill } from '@a2a-js/sdk';
import { accountScope, type ScopedAgent, type ToolStore } from '@agentmesh/bus';

export const A2A_PATH_PREFIX = '/a2a';
const BEARER_SCHEME = 'bearer';
const TEXT_MODES = ['text/plain', 'application/json'];

/** `/a2a/{workflow_id}`: where an agent's JSON-RPC endpoint is. */
export const agentEndpointPath = (workflowId: string): string =>
  `${A2A_PATH_PREFIX}/${encodeURIComponent(workflowId)}`;

export const agentCardPath = (workflowId: string): string =>
  `${agentEndpointPath(workflowId)}/${AGENT_CARD_PATH}`;

function interfaces(baseUrl: string, workflowId: string): AgentInterface[] {
  const url = `${baseUrl}${agentEndpointPath(workflowId)}`;
  return ['1.0', '0.3'].map((protocolVersion) => ({
    url,
    protocolBinding: 'JSONRPC',
    tenant: '',
    protocolVersion,
  }));
}

function cardShell(
  fields: Pick<AgentCard, 'name' | 'description' | 'version' | 'skills' | 'supportedInterfaces'>,
): AgentCard {
  return {
    ...fields,
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: true },
    securitySchemes: {
      [BEARER_SCHEME]: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { description: 'An agentmesh API key of the account', scheme: 'Bearer', bearerFormat: '' },
        },
      },
    },
    securityRequirements: [{ schemes: { [BEARER_SCHEME]: { list: [] } } }],
    defaultInputModes: TEXT_MODES,
    defaultOutputModes: TEXT_MODES,
    signatures: [],
  };
}

const skill = (id: string, name: string, description: string, tags: string[]): AgentSkill => ({
  id,
  name,
  description,
  tags,
  examples: [],
  inputModes: [],
  outputModes: [],
  securityRequirements: [],
});

/** The card of one agent, its skills its tools (registry lookups that fail leave the tool's name alone). */
export async function agentCard(
  scoped: ScopedAgent,
  accountId: string,
  tools: ToolStore,
  baseUrl: string,
): Promise<AgentCard> {
  const { agent } = scoped;
  const scope = accountScope(accountId);
  const toolSkills = await Promise.all(
    agent.tools.map(async (name) => {
      const found = await tools.resolve(scope, name).catch(() => undefined);
      return skill(name, name, found?.tool.description ?? `The tool ${name}`, ['tool']);
    }),
  );
  const skills = [
    ...toolSkills,
    ...(agent.sub_agents ?? []).map((id) =>
      skill(`agent_${id}`, `agent_${id}`, `Calls the agent ${id}`, ['agent']),
    ),
    ...(agent.mcp_servers ?? []).map((name) =>
      skill(`mcp_${name}`, `mcp_${name}`, `The tools of the MCP server ${name}`, ['mcp']),
    ),
  ];
  return cardShell({
    name: agent.name ?? agent.workflow_id,
    description: agent.description ?? `The agentmesh agent ${agent.workflow_id}`,
    version: String(agent.version ?? 1),
    // A card needs one skill at least; an agent without tools answers from its model alone.
    skills: skills.length > 0 ? skills : [skill('answer', 'answer', 'Answers a message', ['chat'])],
    supportedInterfaces: interfaces(baseUrl, agent.workflow_id),
  });
}

/** The account's catalogue: one skill per agent, each naming where its own card is. */
export function catalogueCard(agents: ScopedAgent[], accountId: string, baseUrl: string): AgentCard {
  return cardShell({
    name: `agentmesh agents of ${accountId}`,
    description: `The agents the account ${accountId} may run. Each skill is an agent: its card is at ${baseUrl}/a2a/{skill id}/${AGENT_CARD_PATH} (or this path with ?agent={skill id}), and messages go to ${baseUrl}/a2a/{skill id}.`,
    version: '1',
    skills: agents.map(({ agent }) =>
      skill(
        agent.workflow_id,
        agent.name ?? agent.workflow_id,
        agent.description ?? `The agentmesh agent ${agent.workflow_id}`,
        ['agent'],
      ),
    ),
    supportedInterfaces: [],
  });
}
