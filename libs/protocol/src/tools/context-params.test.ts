import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromHttpPlugin, fromPayloadTool, toHttpPlugin, toPayloadTool } from './adapters.js';
import { HttpTool } from './canonical.js';
import { ContextParam } from './context-params.js';
import { HttpPlugin } from './http-plugin.js';
import { importToolDefinition } from './import.js';
import { toModelTool } from './model-tool.js';
import { PayloadTool } from './payload-tool.js';

const plugin = JSON.parse(
  readFileSync(new URL('../__fixtures__/seeds/000-s2-plugin.json', import.meta.url), 'utf8'),
) as { execution: Record<string, unknown>; auth_config: unknown; parameters: unknown } & Record<
  string,
  unknown
>;

const contextParams = [
  { source: 'user_id', target: 'X-User-Id', location: 'header' },
  { source: 'variables.tenant', target: 'tenant', location: 'query' },
] as const;

const pluginWithContext = {
  ...plugin,
  execution: { ...plugin.execution, context_params: contextParams },
};

describe('context_params on HTTP tools', () => {
  it('when a seed 000 plugin declares context_params, they reach the canonical tool and come back unchanged', () => {
    const canonical = fromHttpPlugin(HttpPlugin.parse(pluginWithContext));
    expect(HttpTool.parse(canonical).execution.context_params).toEqual(contextParams);
    expect(toHttpPlugin(canonical)).toStrictEqual({ schema_version: 'v1', ...pluginWithContext });
  });

  it('when a seed 001 payload tool declares context_params, they survive the round trip', () => {
    const payload = PayloadTool.parse({
      type: 'HTTP',
      name: 'orders',
      description: 'lists orders',
      parameter_schema: { type: 'object', properties: {} },
      execution_config: {
        url: 'https://api.example.com/orders',
        method: 'GET',
        context_params: contextParams,
      },
    });
    const canonical = fromPayloadTool(payload);
    expect(canonical).toMatchObject({ execution: { context_params: contextParams } });
    expect(toPayloadTool(canonical)).toStrictEqual(payload);
  });

  it('when a sys_ai_plugin row carries context_params in its flat execution_config, the tool has them', () => {
    const imported = importToolDefinition({
      name: 'search_company_basic',
      description: 'search',
      parameter_schema: JSON.stringify(plugin.parameters),
      execution_config: JSON.stringify({ ...pluginWithContext.execution, auth_config: plugin.auth_config }),
    });
    if (!imported.success) throw new Error(JSON.stringify(imported.error));
    expect(imported.tool).toMatchObject({ execution: { context_params: contextParams } });
  });

  it('the model-facing function holds no context parameter', () => {
    const canonical = fromHttpPlugin(HttpPlugin.parse(pluginWithContext));
    expect(JSON.stringify(toModelTool(canonical))).not.toMatch(/X-User-Id|variables\.tenant/);
  });

  it("when a plugin's parameters also name a context target, the import is refused at that target", () => {
    const shadowing = {
      ...pluginWithContext,
      parameters: {
        type: 'object',
        properties: { keyword: { type: 'string' }, 'x-user-id': { type: 'string' } },
      },
    };
    const imported = importToolDefinition(shadowing);
    expect(imported.success).toBe(false);
    if (imported.success) return;
    expect(imported.error?.issues).toEqual([
      expect.objectContaining({
        path: ['execution', 'context_params', 0, 'target'],
        message: expect.stringContaining('X-User-Id is also one of the tool'),
      }),
    ]);
  });

  it('when an OpenAPI-imported tool binds an argument to the header a context parameter sets, the import is refused', () => {
    const imported = importToolDefinition({
      type: 'HTTP',
      name: 'get_orders',
      description: 'orders',
      parameters: { type: 'object', properties: { user: { type: 'string' } } },
      execution: {
        method: 'GET',
        url: 'https://api.example.com',
        request_template: {
          method: 'GET',
          path: '/orders',
          arguments: [{ property: 'user', in: 'header', name: 'X-User-Id', required: false }],
        },
        context_params: [{ source: 'user_id', target: 'x-user-id', location: 'header' }],
      },
    });
    expect(imported).toMatchObject({ success: false, format: 'canonical' });
  });

  it('when a seed 001 tool shadows a parameter, the issue points into execution_config', () => {
    const imported = importToolDefinition({
      type: 'HTTP',
      name: 'orders',
      description: 'lists orders',
      parameter_schema: { type: 'object', properties: { user_id: { type: 'string' } } },
      execution_config: {
        url: 'https://api.example.com/orders',
        method: 'GET',
        context_params: [{ source: 'user_id', target: 'user_id', location: 'query' }],
      },
    });
    expect(imported.success).toBe(false);
    if (imported.success) return;
    expect(imported.error?.issues[0]?.path).toEqual(['execution_config', 'context_params', 0, 'target']);
  });

  it.each([
    [{ source: 'password', target: 'X-P', location: 'header' }, 'an unknown task field'],
    [{ source: 'variables.', target: 'X-V', location: 'header' }, 'a variable without a name'],
    [{ source: 'user_id', target: 'X User', location: 'header' }, 'a target that is no HTTP token'],
    [{ source: 'user_id', target: 'uid', location: 'body' }, 'a location other than header or query'],
  ])('%j is refused (%s)', (entry) => {
    expect(ContextParam.safeParse(entry).success).toBe(false);
  });
});
