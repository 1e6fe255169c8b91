/**
 * Tool definitions in KV `mesh_tools`, stored canonical: a body may be seed 000 plugin JSON, a seed
 * 001 tool, a seed 003 `*.tool.json`, a seed 004 dynamic tool or the canonical form; its format is
 * recognised and converted. `GET /tools`, `GET|PUT|DELETE /tools/:name` (the canonical function
 * name), `POST /tools` (409 when a tool of that name exists). Writes answer `{format, tool}`. Every
 * kind of tool lives here, so the routes are called tools; `/plugins`, their first name, stays as an
 * alias (its list answers `{plugins}` where `/tools` answers `{tools}`).
 * Writes go to the caller's registry scope (its account, or the shared catalogue for an admin naming no
 * account); reads by an account caller see its own tools and the shared ones behind them, each labelled
 * with `scope`.
 * Two kinds of tool cannot be deleted here (409 CONFLICT): those written from an assembler's tools
 * directory (the file owns them) and the executors' native tools the assembler mirrors into the shared
 * catalogue (their code owns them).
 */
import {
  filterTools,
  FunctionName,
  importToolDefinition,
  ToolType,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { SHARED_CATALOGUE, type ToolStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import { Conflict, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';
import {
  definitionName,
  labelled,
  registryScopeOf,
  sharedCatalogueIsReadOnly,
} from './registry-scope-replies.js';

interface PluginParams {
  Params: { name: string };
}

const FORMATS =
  'seed 000 plugin JSON, a seed 001 tool, a seed 003 *.tool.json, a seed 004 dynamic tool or a canonical definition';

/** Where the tool routes are mounted, and the key their list answers under. */
export const TOOL_ROUTE_BASES = [
  { base: '/tools', listKey: 'tools' },
  { base: '/plugins', listKey: 'plugins' },
] as const;

export function registerToolRoutes(app: FastifyInstance, plugins: ToolStore): void {
  for (const { base, listKey } of TOOL_ROUTE_BASES) registerToolRoutesAt(app, plugins, base, listKey);
}

function registerToolRoutesAt(app: FastifyInstance, plugins: ToolStore, base: string, listKey: string): void {
  // `?tag=` and `?namespace=` filter by seed 003 tags and by the namespace of the tool's id.
  app.get<{ Querystring: { tag?: string; namespace?: string } }>(base, async (request) => {
    const visible = await plugins.listVisible(registryScopeOf(request));
    const filter = { tag: request.query.tag, namespace: request.query.namespace };
    const kept = new Set(
      filterTools(
        visible.map(({ tool }) => tool),
        filter,
      ),
    );
    return {
      [listKey]: visible.filter(({ tool }) => kept.has(tool)).map(({ tool, scope }) => labelled(tool, scope)),
    };
  });

  app.get<PluginParams>(`${base}/:name`, async (request, reply) => {
    const name = definitionName(FunctionName, request.params.name, 'name');
    if (name instanceof Rejection) return sendRejection(reply, name);
    const found = await plugins.resolve(registryScopeOf(request), name);
    return found ? labelled(found.tool, found.scope) : sendRejection(reply, new NotFound(`no tool ${name}`));
  });

  app.post(base, async (request, reply) => {
    const imported = importTool(request.body);
    if (imported instanceof Rejection) return sendRejection(reply, imported);
    if (await plugins.get(registryScopeOf(request), imported.tool.name)) {
      return sendRejection(reply, new Conflict(`tool ${imported.tool.name} exists; PUT replaces it`));
    }
    return reply
      .code(201)
      .send({ format: imported.format, tool: await plugins.put(registryScopeOf(request), imported.tool) });
  });

  app.put<PluginParams>(`${base}/:name`, async (request, reply) => {
    const pathName = definitionName(FunctionName, request.params.name, 'name');
    if (pathName instanceof Rejection) return sendRejection(reply, pathName);
    const imported = importTool(request.body);
    if (imported instanceof Rejection) return sendRejection(reply, imported);
    if (imported.tool.name !== pathName) {
      return sendRejection(
        reply,
        new InvalidRequest(
          `name: the definition is named ${imported.tool.name}, the path ${request.params.name}`,
        ),
      );
    }
    const scope = registryScopeOf(request);
    const existed = (await plugins.get(scope, imported.tool.name)) !== undefined;
    return reply
      .code(existed ? 200 : 201)
      .send({ format: imported.format, tool: await plugins.put(scope, imported.tool) });
  });

  app.delete<PluginParams>(`${base}/:name`, async (request, reply) => {
    const name = definitionName(FunctionName, request.params.name, 'name');
    if (name instanceof Rejection) return sendRejection(reply, name);
    const scope = registryScopeOf(request);
    const sourceFile = await plugins.sourceFile(scope, name);
    if (sourceFile !== undefined) {
      // The assembler would write it back from its file at its next sync of the directory.
      return sendRejection(
        reply,
        new Conflict(
          `tool ${name} is defined by the file ${sourceFile} of the assembler's tools directory: remove the file to remove the tool`,
          { source_file: sourceFile },
        ),
      );
    }
    const native = scope.kind === 'shared' ? await plugins.get(scope, name) : undefined;
    if (native?.type === ToolType.NATIVE) {
      // Agents bound to it would fail until the assembler mirrored it again (its next restart): the
      // mirror writes an announced tool once, not on every renewal.
      return sendRejection(
        reply,
        new Conflict(
          `tool ${name} is a native tool the executors provide (class ${native.class_name}), mirrored from their announcements: it cannot be deleted through the API; remove it from the executors' code`,
          { type: ToolType.NATIVE, class_name: native.class_name },
        ),
      );
    }
    if (await plugins.delete(scope, name)) return reply.code(204).send();
    if (scope.kind === 'account' && (await plugins.get(SHARED_CATALOGUE, name)) !== undefined) {
      return sendRejection(reply, sharedCatalogueIsReadOnly('plugin', name));
    }
    return sendRejection(reply, new NotFound(`no tool ${name}`));
  });
}

function importTool(body: unknown): { format: string; tool: ToolDefinition } | Rejection {
  const imported = importToolDefinition(body);
  if (imported.success && imported.tool.type === ToolType.AGENT) {
    // Made from agents by the assembler (an agent's `sub_agents`), never stored: the agent is the definition.
    return new InvalidRequest(
      `type: AGENT tools are not stored; list the agent's workflow_id (${imported.tool.workflow_id}) in the calling agent's sub_agents`,
    );
  }
  if (imported.success) return { format: imported.format, tool: imported.tool };
  if (imported.error === undefined)
    return new InvalidRequest(`not a recognised tool definition: send ${FORMATS}`);
  return InvalidRequest.fromZod(imported.error, `as ${imported.format}`);
}
