import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ActionRecallResponse } from '../recall.js';
import { ClearRuntimeConfig } from '../task.js';
import {
  fromDynamicTool,
  fromHttpPlugin,
  fromPayloadTool,
  fromToolJson,
  toDynamicTool,
  toHttpPlugin,
  toPayloadTool,
  toToolJson,
} from './adapters.js';
import { ToolDefinition, type HttpTool } from './canonical.js';
import { isFunctionName } from './function-name.js';
import { DynamicTool } from './dynamic-tool.js';
import { HttpPlugin } from './http-plugin.js';
import { ToolJson } from './tool-json.js';

const FIXTURES = new URL('../__fixtures__/seeds/', import.meta.url);

function loadFixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8'));
}

describe('seed 000 HTTP plugin ⇄ canonical', () => {
  it.each(['000-s1-plugin-from-fragments.json', '000-s2-plugin.json'])(
    '%s comes back unchanged (schema_version added where it was absent)',
    (file) => {
      const original = loadFixture(file) as Record<string, unknown>;
      const canonical = fromHttpPlugin(HttpPlugin.parse(original));
      expect(ToolDefinition.parse(canonical)).toStrictEqual(canonical);
      expect(toHttpPlugin(canonical)).toStrictEqual({ schema_version: 'v1', ...original });
    },
  );

  it('the full plugin maps its execution and auth onto the canonical HTTP tool', () => {
    const canonical = fromHttpPlugin(HttpPlugin.parse(loadFixture('000-s2-plugin.json')));
    expect(canonical).toMatchObject({
      type: 'HTTP',
      name: 'search_company_basic',
      origin: { format: 'http-plugin', id: 'search_company_basic' },
      execution: { method: 'GET', url: 'http://api.qichacha.com/ECIV4/Search', param_placement: 'query' },
      auth: { type: 'api_key', mapping: [{ source: 'QCC_KEY' }, { source: 'QCC_SECRET' }] },
    });
  });

  it("a RuoYi row's status '0' comes back as 'enabled', everything else unchanged", () => {
    const original = loadFixture('000-s3-sys-ai-plugin-row.json') as Record<string, unknown>;
    const canonical = fromHttpPlugin(HttpPlugin.parse(original));
    expect(canonical.status).toBe('enabled');
    expect(toHttpPlugin(canonical)).toStrictEqual({ ...original, status: 'enabled' });
  });

  it('an illegal plugin name gets a legal function name and is restored from origin', () => {
    const original = { ...(loadFixture('000-s2-plugin.json') as object), name: 'qcc.search company' };
    const canonical = fromHttpPlugin(HttpPlugin.parse(original));
    expect(isFunctionName(canonical.name)).toBe(true);
    expect(toHttpPlugin(canonical).name).toBe('qcc.search company');
  });

  it('a renamed canonical tool is written back under its new name, not its stale origin id', () => {
    const canonical = fromHttpPlugin(HttpPlugin.parse(loadFixture('000-s2-plugin.json')));
    const renamed: HttpTool = { ...canonical, name: 'company_search_v2' };
    expect(toHttpPlugin(renamed).name).toBe('company_search_v2');
  });
});

describe('seed 001 payload tools ⇄ canonical', () => {
  const { tools } = ClearRuntimeConfig.pick({ tools: true }).parse(loadFixture('001-s3.3b-tools.json'));
  const raw = (loadFixture('001-s3.3b-tools.json') as { tools: unknown[] }).tools;

  it.each(tools.map((tool, index) => [tool.name, index] as const))(
    '%s comes back unchanged',
    (_name, index) => {
      const tool = tools[index];
      if (tool === undefined) throw new Error('fixture lost a tool');
      const canonical = fromPayloadTool(tool);
      expect(ToolDefinition.parse(canonical)).toStrictEqual(canonical);
      expect(toPayloadTool(canonical)).toStrictEqual(raw[index]);
    },
  );

  it('the short auth_config {source, target} becomes an api_key mapping into a header', () => {
    const http = tools.find((tool) => tool.type === 'HTTP');
    if (http === undefined) throw new Error('fixture lost its HTTP tool');
    expect(fromPayloadTool(http)).toMatchObject({
      type: 'HTTP',
      execution: { method: 'GET', url: 'http://api.qcc.com/ECIV4/Search' },
      auth: { type: 'api_key', mapping: [{ source: 'QCC_KEY', target: 'Token', location: 'header' }] },
    });
  });

  it("seed 002's class_name is read as the native class and written back in seed 001's spelling", () => {
    const rows = ClearRuntimeConfig.pick({ tools: true }).parse(
      loadFixture('002-s3-sys-ai-plugin-rows.json'),
    );
    const native = rows.tools.find((tool) => tool.type === 'NATIVE');
    if (native === undefined) throw new Error('fixture lost its native tool');
    const canonical = fromPayloadTool(native);
    expect(canonical).toMatchObject({ type: 'NATIVE', class_name: 'DeepSearchTool' });
    expect(toPayloadTool(canonical)).toMatchObject({ execution_config: { class: 'DeepSearchTool' } });
  });

  it('an API key mapped into a query parameter keeps the full auth form', () => {
    const canonical = fromHttpPlugin(HttpPlugin.parse(loadFixture('000-s2-plugin.json')));
    const queryKey: HttpTool = {
      ...canonical,
      auth: { type: 'api_key', mapping: [{ source: 'K', target: 'key', location: 'query' }] },
    };
    expect(toPayloadTool(queryKey)).toMatchObject({ execution_config: { auth_config: queryKey.auth } });
  });
});

describe('seed 003 *.tool.json ⇄ canonical', () => {
  it.each([
    '003-s2.2.3-execute-python-script.tool.json',
    '003-s2.2.3-alternative-handler.tool.json',
    '003-s2.2.2-core-fields-external-script.tool.json',
    '003-s2.2.2-core-fields-service-method.tool.json',
  ])('%s comes back unchanged', (file) => {
    const original = loadFixture(file);
    const canonical = fromToolJson(ToolJson.parse(original));
    expect(ToolDefinition.parse(canonical)).toStrictEqual(canonical);
    expect(toToolJson(canonical)).toStrictEqual(original);
  });

  it('core:execute-python-script becomes the legal name core__execute-python-script and keeps its id', () => {
    const canonical = fromToolJson(ToolJson.parse(loadFixture('003-s2.2.3-execute-python-script.tool.json')));
    expect(canonical.name).toBe('core__execute-python-script');
    expect(canonical.tool_id).toBe('core:execute-python-script');
    expect(canonical.origin).toEqual({ format: 'tool-json', id: 'core:execute-python-script' });
    expect(canonical.handler).toEqual({
      type: 'service-method',
      service_name: 'ExternalScriptExecutionService',
      method_name: 'executeScript',
    });
  });

  it('a tool.json without parameters gets an empty object schema, which the model can take', () => {
    const original = loadFixture('003-s2.2.2-core-fields-service-method.tool.json') as Record<
      string,
      unknown
    >;
    const { parameters: _dropped, ...withoutParameters } = original;
    const canonical = fromToolJson(ToolJson.parse(withoutParameters));
    expect(canonical.parameters).toEqual({ type: 'object', properties: {} });
  });
});

describe('seed 004 _dynamic_tools ⇄ canonical', () => {
  it.each(['004-s3.1-response.json', '004-s5-recall-response-example.json', '004-s11.1-response.json'])(
    '%s comes back unchanged',
    (file) => {
      const original = loadFixture(file) as { _dynamic_tools: unknown[] };
      const parsed = ActionRecallResponse.parse(original);
      const canonical = parsed._dynamic_tools.map((tool) => fromDynamicTool(DynamicTool.parse(tool)));
      for (const tool of canonical) expect(ToolDefinition.parse(tool)).toStrictEqual(tool);
      expect({ _dynamic_tools: canonical.map(toDynamicTool) }).toStrictEqual(original);
    },
  );

  it("the appendix's Chinese tool name gets a legal, stable function name and is restored exactly", () => {
    const parsed = ActionRecallResponse.parse(loadFixture('004-s11.1-response.json'));
    const [recalled] = parsed._dynamic_tools;
    if (recalled === undefined) throw new Error('fixture lost its tool');
    const tool = DynamicTool.parse(recalled);
    const first = fromDynamicTool(tool);
    const second = fromDynamicTool(tool);
    expect(isFunctionName(first.name)).toBe(true);
    expect(first.name).toBe(second.name);
    expect(toDynamicTool(first).name).toBe('根据单个对象类查询对象实例');
  });
});
