/**
 * Agents (workflow_id → system prompt, model, bound tools, limits) in KV `mesh_agents`:
 * `GET /agents`, `GET|PUT|DELETE /agents/:workflow_id`, `POST /agents` (409 when it exists).
 * A model key in clear is refused: agents name the credential that holds it.
 */
import { AgentDefinition } from '@agentmesh/protocol';
import type { AgentStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import { Conflict, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';

interface AgentParams {
  Params: { workflow_id: string };
}

export function registerAgentRoutes(app: FastifyInstance, agents: AgentStore): void {
  app.get('/agents', async () => ({ agents: await agents.list() }));

  app.get<AgentParams>('/agents/:workflow_id', async (request, reply) => {
    const agent = await agents.get(request.params.workflow_id);
    return agent ?? sendRejection(reply, new NotFound(`no agent ${request.params.workflow_id}`));
  });

  app.post('/agents', async (request, reply) => {
    const agent = parseAgent(request.body);
    if (agent instanceof Rejection) return sendRejection(reply, agent);
    if (await agents.get(agent.workflow_id)) {
      return sendRejection(reply, new Conflict(`agent ${agent.workflow_id} exists; PUT replaces it`));
    }
    return reply.code(201).send(await agents.put(agent));
  });

  app.put<AgentParams>('/agents/:workflow_id', async (request, reply) => {
    const { workflow_id: workflowId } = request.params;
    const agent = parseAgent(withDefault(request.body, 'workflow_id', workflowId));
    if (agent instanceof Rejection) return sendRejection(reply, agent);
    if (agent.workflow_id !== workflowId) {
      return sendRejection(
        reply,
        new InvalidRequest(`workflow_id: the body names ${agent.workflow_id}, the path ${workflowId}`),
      );
    }
    const existed = (await agents.get(workflowId)) !== undefined;
    return reply.code(existed ? 200 : 201).send(await agents.put(agent));
  });

  app.delete<AgentParams>('/agents/:workflow_id', async (request, reply) => {
    if (await agents.delete(request.params.workflow_id)) return reply.code(204).send();
    return sendRejection(reply, new NotFound(`no agent ${request.params.workflow_id}`));
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
