/**
 * The agents a caller may run, as OpenAI's model objects (`GET /v1/models`): each agent its account sees —
 * its own and the shared catalogue's it does not shadow — with its workflow id as the model id.
 * `owned_by` is the account for the account's own agents and `shared` for the catalogue's; agents carry
 * no creation time, so `created` is 0. Name and description travel in the `agentmesh` extension field.
 */
import { scopeLabel, type ScopedAgent } from '@agentmesh/bus';

export const SHARED_OWNER = 'shared';

export interface AgentModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  agentmesh: { scope: 'account' | 'shared'; name?: string; description?: string };
}

export function agentModel({ agent, scope }: ScopedAgent, accountId: string): AgentModel {
  return {
    id: agent.workflow_id,
    object: 'model',
    created: 0,
    owned_by: scope.kind === 'account' ? accountId : SHARED_OWNER,
    agentmesh: {
      scope: scopeLabel(scope),
      ...(agent.name !== undefined ? { name: agent.name } : {}),
      ...(agent.description !== undefined ? { description: agent.description } : {}),
    },
  };
}
