import { describe, expect, it } from 'vitest';
import { ActionRecallResponse } from '../recall.js';
import { AssembledRuntimeConfig } from '../task.js';
import { TaskEvent } from '../events.js';
import { ToolDefinition } from './canonical.js';
import { isFunctionName } from './function-name.js';
import { fromDynamicMcpTool, isDynamicMcpTool } from './mcp-dynamic-tool.js';
import {
  McpServerDefinition,
  mcpFunctionName,
  mcpServerConnection,
  mcpServerCredentials,
  mcpToolAllowed,
} from './mcp-server.js';

const http = { type: 'streamable-http', url: 'https://mcp.example.com/mcp' } as const;

describe('McpServerDefinition', () => {
  it('when a definition has an HTTP transport, bearer auth, a filter and a prefix, it parses and names its credentials', () => {
    const definition = McpServerDefinition.parse({
      name: 'github',
      transport: http,
      auth: {
        type: 'bearer',
        token_source: 'GITHUB_TOKEN',
        mapping: [{ source: 'ORG', target: 'x-org', location: 'header' }],
      },
      tool_filter: { allow: ['create_issue'] },
      tool_prefix: 'gh_',
    });
    expect(mcpServerCredentials(definition)).toEqual(['GITHUB_TOKEN', 'ORG']);
    const { name, transport, auth, tool_filter, tool_prefix } = definition;
    expect(mcpServerConnection({ ...definition, description: 'GitHub issues' })).toEqual({
      name,
      transport,
      auth,
      tool_filter,
      tool_prefix,
    });
  });

  it('when the auth would put a credential into the query string, the definition is refused', () => {
    const result = McpServerDefinition.safeParse({
      name: 'x',
      transport: http,
      auth: { type: 'api_key', mapping: [{ source: 'K', target: 'key', location: 'query' }] },
    });
    expect(result.success).toBe(false);
  });

  it('when a stdio server gets header auth, or an HTTP server env auth, the definition is refused', () => {
    const stdio = { type: 'stdio', command: 'node', args: ['server.js'] } as const;
    expect(
      McpServerDefinition.safeParse({
        name: 's',
        transport: stdio,
        auth: { type: 'bearer', token_source: 'T' },
      }).success,
    ).toBe(false);
    expect(
      McpServerDefinition.safeParse({
        name: 'h',
        transport: http,
        auth: { type: 'env', mapping: [{ source: 'T', target: 'TOKEN' }] },
      }).success,
    ).toBe(false);
    expect(
      McpServerDefinition.safeParse({
        name: 's',
        transport: stdio,
        auth: { type: 'env', mapping: [{ source: 'T', target: 'TOKEN' }] },
      }).success,
    ).toBe(true);
  });

  it('when a stdio command is not one of the sandbox interpreters, the definition is refused', () => {
    expect(
      McpServerDefinition.safeParse({
        name: 's',
        transport: { type: 'stdio', command: '/bin/sh', args: ['-c', 'x'] },
      }).success,
    ).toBe(false);
  });

  it('the filter offers allowed tools unless denied, and the prefixed names are legal function names', () => {
    expect(mcpToolAllowed(undefined, 'a')).toBe(true);
    expect(mcpToolAllowed({ allow: ['a'] }, 'b')).toBe(false);
    expect(mcpToolAllowed({ allow: ['a'], deny: ['a'] }, 'a')).toBe(false);
    expect(mcpToolAllowed({ allow: [] }, 'a')).toBe(false);
    expect(mcpFunctionName('gh_', 'create_issue')).toBe('gh_create_issue');
    expect(isFunctionName(mcpFunctionName('fs.', 'read file'))).toBe(true);
  });
});

describe('MCP tools in a task', () => {
  it('an MCP tool is a canonical tool, and a task carries the servers its MCP tools name', () => {
    const tool = ToolDefinition.parse({
      type: 'MCP',
      name: 'gh_create_issue',
      description: 'Create an issue',
      parameters: { type: 'object' },
      server: 'github',
      tool_name: 'create_issue',
    });
    const config = AssembledRuntimeConfig.omit({ vault: true }).parse({
      model: { model_name: 'm', base_url: 'http://127.0.0.1:1/v1' },
      tools: [tool],
      mcp_servers: [{ name: 'github', transport: http }],
    });
    expect(config.mcp_servers).toEqual([{ name: 'github', transport: http }]);
  });

  it('when a task names one MCP server twice, it is refused', () => {
    const result = AssembledRuntimeConfig.omit({ vault: true }).safeParse({
      model: { model_name: 'm', base_url: 'http://127.0.0.1:1/v1' },
      tools: [],
      mcp_servers: [
        { name: 'github', transport: http },
        { name: 'github', transport: http },
      ],
    });
    expect(result.success).toBe(false);
  });
});

describe('recalled MCP actions', () => {
  it('recall may answer an MCP dynamic tool beside a tool box one; it becomes a canonical MCP tool', () => {
    const answer = ActionRecallResponse.parse({
      _dynamic_tools: [
        {
          name: '查询',
          description: 'Look up',
          parameters: { type: 'object', properties: { q: { type: 'string' } } },
          mcp: { server: 'crm', tool_name: 'lookup' },
          fixed_arguments: { id: 7 },
        },
      ],
    });
    const [recalled] = answer._dynamic_tools;
    if (recalled === undefined || !isDynamicMcpTool(recalled)) throw new Error('not read as an MCP tool');
    const tool = fromDynamicMcpTool(recalled);
    expect(ToolDefinition.parse(tool)).toEqual(tool);
    expect(tool).toMatchObject({
      type: 'MCP',
      server: 'crm',
      tool_name: 'lookup',
      fixed_arguments: { id: 7 },
    });
    expect(isFunctionName(tool.name)).toBe(true);
  });
});

describe('tool_progress events', () => {
  it('a tool_progress event carries the call, the progress and its total', () => {
    const event = TaskEvent.parse({
      trace_id: '0123456789abcdef0123456789abcdef',
      seq: 3,
      ts: '2026-01-01T00:00:00.000Z',
      attempt: 1,
      type: 'tool_progress',
      data: { call_id: 'c1', tool: 'count', progress: 2, total: 3, message: 'step 2' },
    });
    expect(event.type).toBe('tool_progress');
  });
});
