/**
 * Agents (workflow_id → system prompt, model, bound tools, limits) in KV `mesh_agents`:
 * `GET /agents`, `GET|PUT|DELETE /agents/:workflow_id`, `POST /agents` (409 when it exists).
 * Writes go to the caller's registry scope (its account, or the shared catalogue for an admin naming no
 * account); reads by an account caller see its own agents and the shared ones behind them, each labelled
 * with `scope`. A model key in clear is refused: agents name the credential that holds it.
 */
import { AgentDefinition, WorkflowId } from '@agentmesh/protocol';
import { SHARED_CATALOGUE, type AgentStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import { Conflict, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';
import {
  definitionName,
  labelled,
  registryScopeOf,
  sharedCatalogueIsReadOnly,
} from './registry-scope-replies.js';

interface AgentParams {
  Params: { workflow_id: string };
}

export function registerAgentRoutes(app: FastifyInstance, agents: AgentStore): void {
  app.get('/agents', async (request) => {
    const visible = await agents.listVisible(registryScopeOf(request));
    return { agents: visible.map(({ agent, scope }) => labelled(agent, scope)) };
  });

  app.get<AgentParams>('/agents/:workflow_id', async (request, reply) => {
    const id = definitionName(WorkflowId, request.params.workflow_id, 'workflow_id');
    if (id instanceof Rejection) return sendRejection(reply, id);
    const found = await agents.resolve(registryScopeOf(request), id);
    return found ? labelled(found.agent, found.scope) : sendRejection(reply, new NotFound(`no agent ${id}`));
  });

  app.post('/agents', async (request, reply) => {
    const agent = parseAgent(request.body);
    if (agent instanceof Rejection) return sendRejection(reply, agent);
    if (await agents.get(registryScopeOf(request), agent.workflow_id)) {
      return sendRejection(reply, new Conflict(`agent ${agent.workflow_id} exists; PUT replaces it`));
    }
    return reply.code(201).send(await agents.put(registryScopeOf(request), agent));
  });

  app.put<AgentParams>('/agents/:workflow_id', async (request, reply) => {
    const workflowId = definitionName(WorkflowId, request.params.workflow_id, 'workflow_id');
    if (workflowId instanceof Rejection) return sendRejection(reply, workflowId);
    const agent = parseAgent(withDefault(request.body, 'workflow_id', workflowId));
    if (agent instanceof Rejection) return sendRejection(reply, agent);
    if (agent.workflow_id !== workflowId) {
      return sendRejection(
        reply,
        new InvalidRequest(`workflow_id: the body names ${agent.workflow_id}, the path ${workflowId}`),
      );
    }
    const existed = (await agents.get(registryScopeOf(request), workflowId)) !== undefined;
    return reply.code(existed ? 200 : 201).send(await agents.put(registryScopeOf(request), agent));
  });

  app.delete<AgentParams>('/agents/:workflow_id', async (request, reply) => {
    const id = definitionName(WorkflowId, request.params.workflow_id, 'workflow_id');
    if (id instanceof Rejection) return sendRejection(reply, id);
    const scope = registryScopeOf(request);
    if (await agents.delete(scope, id)) return reply.code(204).send();
    if (scope.kind === 'account' && (await agents.get(SHARED_CATALOGUE, id)) !== undefined) {
      return sendRejection(reply, sharedCatalogueIsReadOnly('agent', id));
    }
    return sendRejection(reply, new NotFound(`no agent ${id}`));
  });
}

function parseAgent(body: unknown): AgentDefinition | Rejection {
  const parsed = AgentDefinition.safeParse(body);
  return parsed.success ? parsed.data : InvalidRequest.fromZod(parsed.error);
}

/** The path names the resource; the body may leave it out. */
export function withDefault(body: unknown, key: string, value: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && !(key in body)
    ? { ...body, [key]: value }
    : body;
}
