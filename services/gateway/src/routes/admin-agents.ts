/**
 * Agents (workflow_id → system prompt, model, bound tools, limits) in KV `mesh_agents`:
 * `GET /agents`, `GET|PUT|DELETE /agents/:workflow_id`, `POST /agents` (409 when it exists).
 * Versions: every write is a new immutable version (`version`, `digest` in the answer);
 * `GET /agents/:workflow_id/versions` lists the kept ones, `GET .../versions/:version` shows one,
 * `GET .../diff?from=&to=` compares two, `POST .../rollback {version}` points the name at a kept one.
 * Writes go to the caller's registry scope (its account, or the shared catalogue for an admin naming no
 * account); reads by an account caller see its own agents and the shared ones behind them, each labelled
 * with `scope`. A model key in clear is refused: agents name the credential that holds it.
 */
import { createHash } from 'node:crypto';
import {
  AgentDefinition,
  AgentRollbackRequest,
  canonicalJson,
  diffJson,
  parseAgentVersion,
  WorkflowId,
  type AgentDiff,
  type AgentVersionList,
  type BoundToolDigests,
  type VersionedAgent,
} from '@agentmesh/protocol';
import { SHARED_CATALOGUE, type AgentStore, type RegistryScope, type ToolStore } from '@agentmesh/bus';
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

interface VersionParams {
  Params: { workflow_id: string; version: string };
}

interface DiffQuery {
  Params: { workflow_id: string };
  Querystring: { from?: string; to?: string };
}

export interface AgentRouteOptions {
  /** Resolves the agent's bound tools at a write, to record their digests in the version. */
  tools?: ToolStore;
  /** Versions kept per agent (AGENT_VERSIONS_KEPT). */
  keep?: number;
}

export function registerAgentRoutes(
  app: FastifyInstance,
  agents: AgentStore,
  options: AgentRouteOptions = {},
): void {
  const write = async (scope: RegistryScope, agent: AgentDefinition): Promise<VersionedAgent> =>
    agents.put(scope, agent, {
      ...(options.keep !== undefined && { keep: options.keep }),
      ...(options.tools && { toolDigests: await boundToolDigests(options.tools, scope, agent) }),
    });

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
    return reply.code(201).send(await write(registryScopeOf(request), agent));
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
    return reply.code(existed ? 200 : 201).send(await write(registryScopeOf(request), agent));
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

  app.get<AgentParams>('/agents/:workflow_id/versions', async (request, reply) => {
    const id = definitionName(WorkflowId, request.params.workflow_id, 'workflow_id');
    if (id instanceof Rejection) return sendRejection(reply, id);
    const found = await agents.resolve(registryScopeOf(request), id);
    const versions = found && (await agents.versions(found.scope, id));
    if (!found || !versions) return sendRejection(reply, new NotFound(`no agent ${id}`));
    const list: AgentVersionList = { workflow_id: id, ...versions };
    return labelled(list, found.scope);
  });

  app.get<VersionParams>('/agents/:workflow_id/versions/:version', async (request, reply) => {
    const shown = await findVersion(
      registryScopeOf(request),
      request.params.workflow_id,
      request.params.version,
      'version',
    );
    if (shown instanceof Rejection) return sendRejection(reply, shown);
    return labelled(shown.agent, shown.scope);
  });

  app.get<DiffQuery>('/agents/:workflow_id/diff', async (request, reply) => {
    const { from = '', to = '' } = request.query;
    const a = await findVersion(registryScopeOf(request), request.params.workflow_id, from, 'from');
    if (a instanceof Rejection) return sendRejection(reply, a);
    const b = await findVersion(registryScopeOf(request), request.params.workflow_id, to, 'to');
    if (b instanceof Rejection) return sendRejection(reply, b);
    const diff: AgentDiff = {
      workflow_id: a.agent.workflow_id,
      from: { version: a.agent.version, digest: a.agent.digest },
      to: { version: b.agent.version, digest: b.agent.digest },
      changes: diffJson(definitionOf(a.agent), definitionOf(b.agent)),
    };
    return diff;
  });

  app.post<AgentParams>('/agents/:workflow_id/rollback', async (request, reply) => {
    const id = definitionName(WorkflowId, request.params.workflow_id, 'workflow_id');
    if (id instanceof Rejection) return sendRejection(reply, id);
    const body = AgentRollbackRequest.safeParse(request.body);
    if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
    const scope = registryScopeOf(request);
    if ((await agents.get(scope, id)) === undefined) {
      if (scope.kind === 'account' && (await agents.get(SHARED_CATALOGUE, id)) !== undefined) {
        return sendRejection(reply, sharedCatalogueIsReadOnly('agent', id));
      }
      return sendRejection(reply, new NotFound(`no agent ${id}`));
    }
    const current = await agents.rollback(scope, id, body.data.version);
    if (!current) return sendRejection(reply, versionNotFound(id, body.data.version));
    return labelled(current, scope);
  });

  /** A version of the agent the caller sees under `rawId` (its own, else the shared one). */
  async function findVersion(
    scope: RegistryScope,
    rawId: string,
    rawVersion: string,
    what: string,
  ): Promise<{ agent: VersionedAgent; scope: RegistryScope } | Rejection> {
    const id = definitionName(WorkflowId, rawId, 'workflow_id');
    if (id instanceof Rejection) return id;
    const version = parseAgentVersion(rawVersion);
    if (version === undefined) {
      return new InvalidRequest(`${what}: "${rawVersion}" is not a version (a number from 1)`);
    }
    const found = await agents.resolveVersion(scope, id, version);
    if (!found) return new NotFound(`no agent ${id}`);
    return found.agent ? { agent: found.agent, scope: found.scope } : versionNotFound(id, version);
  }
}

/** No kept version `version` of the agent. */
function versionNotFound(workflowId: string, version: number): NotFound {
  return new NotFound(`agent ${workflowId} has no version ${version} (or it is no longer kept)`);
}

/** A version's definition without its version fields, as a diff compares them. */
function definitionOf(agent: VersionedAgent): AgentDefinition {
  return AgentDefinition.parse(agent);
}

/** `sha256:` of each bound tool as the writer's scope resolves it now; null for a name none answers. */
async function boundToolDigests(
  tools: ToolStore,
  scope: RegistryScope,
  agent: AgentDefinition,
): Promise<BoundToolDigests> {
  const digests: BoundToolDigests = {};
  for (const name of agent.tools) {
    const found = await tools.resolve(scope, name);
    digests[name] = found
      ? `sha256:${createHash('sha256').update(canonicalJson(found.tool)).digest('hex')}`
      : null;
  }
  return digests;
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
