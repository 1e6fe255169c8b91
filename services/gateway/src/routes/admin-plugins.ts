/**
 * Tool definitions in KV `mesh_plugins`, stored canonical: a body may be seed 000 plugin JSON, a seed
 * 001 tool, a seed 003 `*.tool.json`, a seed 004 dynamic tool or the canonical form; its format is
 * recognised and converted. `GET /plugins`, `GET|PUT|DELETE /plugins/:name` (the canonical function
 * name), `POST /plugins` (409 when a tool of that name exists). Writes answer `{format, tool}`.
 */
import { filterTools, importToolDefinition, type ToolDefinition } from '@agentmesh/protocol';
import type { PluginStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import { Conflict, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';

interface PluginParams {
  Params: { name: string };
}

const FORMATS =
  'seed 000 plugin JSON, a seed 001 tool, a seed 003 *.tool.json, a seed 004 dynamic tool or a canonical definition';

export function registerPluginRoutes(app: FastifyInstance, plugins: PluginStore): void {
  // `?tag=` and `?namespace=` filter by seed 003 tags and by the namespace of the tool's id.
  app.get<{ Querystring: { tag?: string; namespace?: string } }>('/plugins', async (request) => ({
    plugins: filterTools(await plugins.list(), {
      tag: request.query.tag,
      namespace: request.query.namespace,
    }),
  }));

  app.get<PluginParams>('/plugins/:name', async (request, reply) => {
    const tool = await plugins.get(request.params.name);
    return tool ?? sendRejection(reply, new NotFound(`no plugin ${request.params.name}`));
  });

  app.post('/plugins', async (request, reply) => {
    const imported = importTool(request.body);
    if (imported instanceof Rejection) return sendRejection(reply, imported);
    if (await plugins.get(imported.tool.name)) {
      return sendRejection(reply, new Conflict(`plugin ${imported.tool.name} exists; PUT replaces it`));
    }
    return reply.code(201).send({ format: imported.format, tool: await plugins.put(imported.tool) });
  });

  app.put<PluginParams>('/plugins/:name', async (request, reply) => {
    const imported = importTool(request.body);
    if (imported instanceof Rejection) return sendRejection(reply, imported);
    if (imported.tool.name !== request.params.name) {
      return sendRejection(
        reply,
        new InvalidRequest(
          `name: the definition is named ${imported.tool.name}, the path ${request.params.name}`,
        ),
      );
    }
    const existed = (await plugins.get(imported.tool.name)) !== undefined;
    return reply
      .code(existed ? 200 : 201)
      .send({ format: imported.format, tool: await plugins.put(imported.tool) });
  });

  app.delete<PluginParams>('/plugins/:name', async (request, reply) => {
    const { name } = request.params;
    const sourceFile = await plugins.sourceFile(name);
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
    if (await plugins.delete(name)) return reply.code(204).send();
    return sendRejection(reply, new NotFound(`no plugin ${name}`));
  });
}

function importTool(body: unknown): { format: string; tool: ToolDefinition } | Rejection {
  const imported = importToolDefinition(body);
  if (imported.success) return { format: imported.format, tool: imported.tool };
  if (imported.error === undefined)
    return new InvalidRequest(`not a recognised tool definition: send ${FORMATS}`);
  return InvalidRequest.fromZod(imported.error, `as ${imported.format}`);
}
