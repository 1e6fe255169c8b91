// Malformed tool definitions in each format are rejected, and the rejection names the field to fix.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rejectionPaths } from '../__fixtures__/rejection-paths.js';
import { ToolDefinition } from './canonical.js';
import { DynamicTool } from './dynamic-tool.js';
import { HttpPlugin } from './http-plugin.js';
import { PayloadTool } from './payload-tool.js';
import { ToolJson } from './tool-json.js';

const FIXTURES = new URL('../__fixtures__/seeds/', import.meta.url);

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as Record<string, unknown>;
}

/** A deep copy of `value` with the property at `path` set (or deleted when `replacement` is undefined). */
function withChange(value: unknown, path: readonly (string | number)[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (replacement === undefined) delete node[last];
  else node[last] = replacement;
  return copy;
}

const plugin = fixture('000-s2-plugin.json');
const scriptTool = fixture('003-s2.2.3-execute-python-script.tool.json');
const externalScript = fixture('003-s2.2.2-core-fields-external-script.tool.json');
const payloadTools = (fixture('001-s3.3b-tools.json') as { tools: unknown[] }).tools;
const dynamicTool = (fixture('004-s3.1-response.json') as { _dynamic_tools: unknown[] })._dynamic_tools[0];

describe('seed 000 plugin rejections', () => {
  it.each([
    {
      scenario: 'an unknown HTTP method',
      path: ['execution', 'method'],
      replacement: 'FETCH',
      at: 'execution.method',
    },
    {
      scenario: 'a relative base_url',
      path: ['execution', 'base_url'],
      replacement: '/ECIV4/Search',
      at: 'execution.base_url',
    },
    {
      scenario: 'a param_placement outside query|body|path',
      path: ['execution', 'param_placement'],
      replacement: 'cookie',
      at: 'execution.param_placement',
    },
    {
      scenario: 'an auth type outside the four',
      path: ['auth_config', 'type'],
      replacement: 'digest',
      at: 'auth_config.type',
    },
    {
      scenario: 'an auth location outside header|query',
      path: ['auth_config', 'mapping', 1, 'location'],
      replacement: 'body',
      at: 'auth_config.mapping[1].location',
    },
    {
      scenario: 'a mapping without source',
      path: ['auth_config', 'mapping', 0, 'source'],
      replacement: undefined,
      at: 'auth_config.mapping[0].source',
    },
    {
      scenario: 'parameters that are not an object schema',
      path: ['parameters', 'type'],
      replacement: 'array',
      at: 'parameters.type',
    },
    { scenario: 'a missing description', path: ['description'], replacement: undefined, at: 'description' },
    { scenario: 'a status RuoYi never writes', path: ['status'], replacement: '2', at: 'status' },
  ] as const)('$scenario is rejected at $at', ({ path, replacement, at }) => {
    expect(rejectionPaths(HttpPlugin, withChange(plugin, path, replacement))).toContain(at);
  });

  it('an oauth2 config without token_url is rejected at auth_config.oauth2.token_url', () => {
    const oauth = withChange(plugin, ['auth_config'], {
      type: 'oauth2',
      oauth2: { client_id_source: 'ID', client_secret_source: 'SECRET' },
    });
    expect(rejectionPaths(HttpPlugin, oauth)).toEqual(['auth_config.oauth2.token_url']);
  });

  it('a bearer config names the credential holding the token', () => {
    const bearer = withChange(plugin, ['auth_config'], { type: 'bearer' });
    expect(rejectionPaths(HttpPlugin, bearer)).toEqual(['auth_config.token_source']);
    const ok = withChange(plugin, ['auth_config'], { type: 'bearer', token_source: 'GITHUB_TOKEN' });
    expect(HttpPlugin.safeParse(ok).success).toBe(true);
  });

  it('accepts oauth2 client credentials with scopes and audience, and basic auth with two sources', () => {
    const oauth = withChange(plugin, ['auth_config'], {
      type: 'oauth2',
      oauth2: {
        token_url: 'https://auth.example.com/oauth/token',
        client_id_source: 'CLIENT_ID',
        client_secret_source: 'CLIENT_SECRET',
        scopes: ['read'],
        audience: 'https://api.example.com',
      },
    });
    const basic = withChange(plugin, ['auth_config'], {
      type: 'basic',
      username_source: 'USER',
      password_source: 'PASS',
    });
    expect(HttpPlugin.safeParse(oauth).success).toBe(true);
    expect(HttpPlugin.safeParse(basic).success).toBe(true);
  });

  it('a base_url with {path} templates is accepted for path placement', () => {
    const templated = withChange(
      plugin,
      ['execution', 'base_url'],
      'https://api.example.com/companies/{id}/people',
    );
    expect(HttpPlugin.safeParse(templated).success).toBe(true);
  });
});

describe('seed 001 payload tool rejections', () => {
  it('a native tool without class or class_name is rejected at execution_config.class_name', () => {
    const broken = withChange(payloadTools[0], ['execution_config'], {});
    expect(rejectionPaths(PayloadTool, broken)).toEqual(['execution_config.class_name']);
  });

  it('an HTTP tool with a lower-case method is rejected at execution_config.method', () => {
    const broken = withChange(payloadTools[1], ['execution_config', 'method'], 'get');
    expect(rejectionPaths(PayloadTool, broken)).toEqual(['execution_config.method']);
  });

  it('a short auth_config without target is rejected at execution_config.auth_config.target', () => {
    const broken = withChange(payloadTools[1], ['execution_config', 'auth_config', 'target'], undefined);
    expect(rejectionPaths(PayloadTool, broken)).toEqual(['execution_config.auth_config.target']);
  });

  it('an unknown tool type is rejected at type', () => {
    expect(rejectionPaths(PayloadTool, withChange(payloadTools[0], ['type'], 'PYTHON'))).toEqual(['type']);
  });
});

describe('seed 003 tool.json rejections', () => {
  it('an external-script handler needs scriptPath and language', () => {
    const broken = withChange(externalScript, ['handler'], { type: 'external-script' });
    expect(rejectionPaths(ToolJson, broken)).toEqual(['handler.scriptPath', 'handler.language']);
  });

  it('a service-method handler needs serviceName and methodName', () => {
    const broken = withChange(scriptTool, ['handler'], { type: 'service-method', scriptPath: 'a.py' });
    expect(rejectionPaths(ToolJson, broken)).toEqual(['handler.serviceName', 'handler.methodName']);
  });

  it('a script language outside python|nodejs|bun is rejected at handler.language', () => {
    const broken = withChange(externalScript, ['handler', 'language'], 'ruby');
    expect(rejectionPaths(ToolJson, broken)).toEqual(['handler.language']);
  });

  it.each([
    { at: 'toolId', path: ['toolId'], replacement: undefined },
    { at: 'displayName', path: ['displayName'], replacement: undefined },
    { at: 'version', path: ['version'], replacement: undefined },
    {
      at: 'securityContext.fileAccess.allowRead',
      path: ['securityContext', 'fileAccess', 'allowRead'],
      replacement: 'self',
    },
    {
      at: 'securityContext.networkAccess.allowHosts[0]',
      path: ['securityContext', 'networkAccess', 'allowHosts'],
      replacement: [1],
    },
    { at: 'examples[1].input', path: ['examples', 1, 'input'], replacement: 'not an object' },
    { at: 'tags[0]', path: ['tags', 0], replacement: 7 },
  ] as const)('a malformed $at is rejected at $at', ({ at, path, replacement }) => {
    expect(rejectionPaths(ToolJson, withChange(scriptTool, path, replacement))).toContain(at);
  });
});

describe('seed 004 dynamic tool rejections', () => {
  it.each([
    { at: 'api_url', path: ['api_url'], replacement: 'proxy/7acb8add' },
    { at: 'fixed_params.header', path: ['fixed_params', 'header'], replacement: 'x-account-id: test' },
    { at: 'parameters', path: ['parameters'], replacement: undefined },
  ] as const)('a malformed $at is rejected at $at', ({ at, path, replacement }) => {
    expect(rejectionPaths(DynamicTool, withChange(dynamicTool, path, replacement))).toContain(at);
  });

  it('missing fixed_params locations default to empty objects', () => {
    const partial = withChange(dynamicTool, ['fixed_params'], { header: { 'x-account-id': 'test' } });
    expect(DynamicTool.parse(partial).fixed_params).toEqual({
      header: { 'x-account-id': 'test' },
      path: {},
      query: {},
      body: {},
    });
  });

  it('cookie fixed_params (recall places them when the spec declares a cookie parameter) survive parsing', () => {
    const withCookie = withChange(dynamicTool, ['fixed_params'], { cookie: { session: 's1' } });
    expect(DynamicTool.parse(withCookie).fixed_params.cookie).toEqual({ session: 's1' });
  });
});

describe('canonical ToolDefinition', () => {
  const base = {
    name: 'lookup',
    description: 'Looks things up.',
    parameters: { type: 'object', properties: {} },
  };

  it('accepts each type and rejects an illegal function name at name', () => {
    expect(ToolDefinition.safeParse({ ...base, type: 'NATIVE', class_name: 'Lookup' }).success).toBe(true);
    expect(
      rejectionPaths(ToolDefinition, { ...base, name: 'core:lookup', type: 'NATIVE', class_name: 'L' }),
    ).toEqual(['name']);
  });

  it('rejects an unknown type at type', () => {
    expect(rejectionPaths(ToolDefinition, { ...base, type: 'GRPC' })).toEqual(['type']);
  });

  it('when an MCP tool lacks its server and tool name, the rejection names both', () => {
    expect(rejectionPaths(ToolDefinition, { ...base, type: 'MCP' }).sort()).toEqual(['server', 'tool_name']);
  });

  it('rejects an argument location outside path|query|header|cookie|body', () => {
    const http = {
      ...base,
      type: 'HTTP',
      execution: { method: 'POST', url: 'https://api.example.com/x', argument_locations: { q: 'fragment' } },
    };
    expect(rejectionPaths(ToolDefinition, http)).toEqual(['execution.argument_locations.q']);
  });
});
