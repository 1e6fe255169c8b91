/**
 * MCP server definitions (transport, vault-named auth, tool filter, prefix) in KV `mesh_mcp_servers`:
 * `GET /mcp-servers`, `GET|PUT|DELETE /mcp-servers/:name`. Owned like agents and tools: writes go to the
 * caller's registry scope (its account, or the shared catalogue for an admin naming no account); reads by an
 * account caller see its own servers and the shared ones behind them, each labelled with `scope`. A
 * definition holds no secret: its auth names the caller's credentials (`/v1/admin/credentials`).
 */
import { McpServerDefinition, McpServerName } from '@agentmesh/protocol';
import { SHARED_CATALOGUE, type McpServerStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import { InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';
import { withDefault } from './admin-agents.js';
import {
  definitionName,
  labelled,
  registryScopeOf,
  sharedCatalogueIsReadOnly,
} from './registry-scope-replies.js';

interface ServerParams {
  Params: { name: string };
}

export function registerMcpServerRoutes(app: FastifyInstance, servers: McpServerStore): void {
  app.get('/mcp-servers', async (request) => {
    const visible = await servers.listVisible(registryScopeOf(request));
    return { mcp_servers: visible.map(({ server, scope }) => labelled(server, scope)) };
  });

  app.get<ServerParams>('/mcp-servers/:name', async (request, reply) => {
    const name = definitionName(McpServerName, request.params.name, 'name');
    if (name instanceof Rejection) return sendRejection(reply, name);
    const found = await servers.resolve(registryScopeOf(request), name);
    return found
      ? labelled(found.server, found.scope)
      : sendRejection(reply, new NotFound(`no MCP server ${name}`));
  });

  app.put<ServerParams>('/mcp-servers/:name', async (request, reply) => {
    const name = definitionName(McpServerName, request.params.name, 'name');
    if (name instanceof Rejection) return sendRejection(reply, name);
    const parsed = McpServerDefinition.safeParse(withDefault(request.body, 'name', name));
    if (!parsed.success) return sendRejection(reply, InvalidRequest.fromZod(parsed.error));
    if (parsed.data.name !== name) {
      return sendRejection(
        reply,
        new InvalidRequest(`name: the body names ${parsed.data.name}, the path ${name}`),
      );
    }
    const scope = registryScopeOf(request);
    const existed = (await servers.get(scope, name)) !== undefined;
    return reply.code(existed ? 200 : 201).send(await servers.put(scope, parsed.data));
  });

  app.delete<ServerParams>('/mcp-servers/:name', async (request, reply) => {
    const name = definitionName(McpServerName, request.params.name, 'name');
    if (name instanceof Rejection) return sendRejection(reply, name);
    const scope = registryScopeOf(request);
    if (await servers.delete(scope, name)) return reply.code(204).send();
    if (scope.kind === 'account' && (await servers.get(SHARED_CATALOGUE, name)) !== undefined) {
      return sendRejection(reply, sharedCatalogueIsReadOnly('MCP server', name));
    }
    return sendRejection(reply, new NotFound(`no MCP server ${name}`));
  });
}
