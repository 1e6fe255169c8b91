/**
 * `POST /v1/admin/tools/import` (alias `/v1/admin/plugins/import`): an OpenAPI 3.0/3.1 or Swagger 2.0 document becomes one HTTP plugin per
 * operation in KV `mesh_tools` (see ../plugin-import/), in the caller's registry scope. A plugin of the same name is replaced — an
 * import is how a changed API is brought up to date — and the answer says which existed; `dry_run`
 * answers the same without storing, plus the plugins themselves. Its body limit is its own (documents
 * are large); the management plane's check of the caller runs before the body is read.
 */
import type { ToolStore } from '@agentmesh/bus';
import type { HttpTool } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { FastifyInstance } from 'fastify';
import { InvalidRequest, Rejection, sendRejection } from '../errors.js';
import { registryScopeOf } from './registry-scope-replies.js';
import { planPluginImport, type SkippedOperation } from '../plugin-import/import-plan.js';
import { PluginImportRequest } from '../plugin-import/import-request.js';

export interface PluginImportRouteDeps {
  plugins: ToolStore;
  bodyLimitBytes: number;
  log: Logger;
}

interface ImportedPlugin {
  name: string;
  method: string;
  path: string;
  /** The operationId or `METHOD /path` it came from. */
  operation: string;
  /** A plugin of this name existed and was (on a dry run: would be) replaced. */
  existed: boolean;
}

/** KV reads and writes in flight at once while storing a large document's plugins. */
const STORE_CONCURRENCY = 16;

export function registerPluginImportRoute(app: FastifyInstance, deps: PluginImportRouteDeps): void {
  for (const path of ['/tools/import', '/plugins/import']) {
    app.post(path, { bodyLimit: deps.bodyLimitBytes }, async (request, reply) => {
      const body = PluginImportRequest.safeParse(request.body);
      if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
      const plan = planPluginImport(body.data);
      if (plan instanceof Rejection) return sendRejection(reply, plan);

      const dryRun = body.data.dry_run === true;
      const imported: ImportedPlugin[] = [];
      const skipped: SkippedOperation[] = [...plan.skipped];
      await forEachBatch(plan.tools, STORE_CONCURRENCY, async (tool) => {
        const operation = tool.origin?.id ?? tool.name;
        try {
          const existed = (await deps.plugins.get(registryScopeOf(request), tool.name)) !== undefined;
          if (!dryRun) await deps.plugins.put(registryScopeOf(request), tool);
          imported.push(describe(tool, operation, existed));
        } catch (error) {
          deps.log.warn({ err: error, plugin: tool.name }, 'imported plugin not stored');
          skipped.push({ operation, reason: `could not be stored: ${(error as Error).message}` });
        }
      });
      const order = new Map(plan.tools.map((tool, index) => [tool.name, index]));
      imported.sort((a, b) => (order.get(a.name) ?? 0) - (order.get(b.name) ?? 0));
      deps.log.info(
        { imported: imported.length, skipped: skipped.length, dry_run: dryRun },
        dryRun ? 'plugin import previewed' : 'plugins imported',
      );
      return reply.code(!dryRun && imported.length > 0 ? 201 : 200).send({
        dry_run: dryRun,
        imported,
        skipped,
        credentials: plan.credentials,
        warnings: plan.warnings,
        ...(dryRun ? { plugins: plan.tools } : {}),
      });
    });
  }
}

function describe(tool: HttpTool, operation: string, existed: boolean): ImportedPlugin {
  return {
    name: tool.name,
    method: tool.execution.method,
    path: tool.execution.request_template?.path ?? '',
    operation,
    existed,
  };
}

async function forEachBatch<T>(items: T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let start = 0; start < items.length; start += size) {
    await Promise.all(items.slice(start, start + size).map(work));
  }
}
