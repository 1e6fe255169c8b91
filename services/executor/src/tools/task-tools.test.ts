import { describe, expect, it } from 'vitest';
import { appendixDynamicTool, recallAnswer } from '../__fixtures__/recall-answers.js';
import { searchTool } from '../__fixtures__/tasks.js';
import type { NativeTool } from '@agentmesh/protocol';
import { MAX_TOOLS_PER_REQUEST, shownToolResult, TaskToolSet } from './task-tools.js';

const PROXY = 'http://127.0.0.1:9/proxy/tool-1';
const RECALL = 'recall_actions';
/** Recall's native tool: its answers may add dynamic tools. */
const recall: NativeTool = {
  type: 'NATIVE',
  name: RECALL,
  description: 'asks recall',
  parameters: { type: 'object', properties: {} },
  class_name: 'RecallActionsTool',
};

describe("a task's tool set", () => {
  it('a result carrying _dynamic_tools makes them callable and shown to the model after the assembled tools', () => {
    const tools = new TaskToolSet([recall, searchTool('http://127.0.0.1:9')]);
    const change = tools.absorb(recallAnswer(appendixDynamicTool(PROXY)), RECALL);

    expect(change).toEqual({ added: ['query_object_instances'], replaced: [], rejected: [] });
    expect(tools.get('query_object_instances')).toMatchObject({ type: 'DYNAMIC', api_url: PROXY });
    expect(tools.names()).toEqual([RECALL, 'search', 'query_object_instances']);
    expect(tools.modelTools().map((tool) => tool.function.name)).toEqual([
      RECALL,
      'search',
      'query_object_instances',
    ]);
  });

  it('a second tool of the same name replaces the first instead of doubling it', () => {
    const tools = new TaskToolSet([recall]);
    tools.absorb(recallAnswer(appendixDynamicTool(PROXY)), RECALL);
    const change = tools.absorb(recallAnswer(appendixDynamicTool(`${PROXY}-v2`)), RECALL);

    expect(change).toEqual({ added: [], replaced: ['query_object_instances'], rejected: [] });
    expect(tools.names()).toEqual([RECALL, 'query_object_instances']);
    expect(tools.modelTools()).toHaveLength(2);
    expect(tools.get('query_object_instances')).toMatchObject({ api_url: `${PROXY}-v2` });
  });

  it('two tools of one name in one result leave one tool, the later one', () => {
    const tools = new TaskToolSet([recall]);
    const change = tools.absorb(
      recallAnswer(appendixDynamicTool(`${PROXY}-a`), appendixDynamicTool(`${PROXY}-b`)),
      RECALL,
    );

    expect(change).toEqual({ added: ['query_object_instances'], replaced: [], rejected: [] });
    expect(tools.get('query_object_instances')).toMatchObject({ api_url: `${PROXY}-b` });
  });

  it('a dynamic tool named like an assembled tool is rejected: the assembled tool stays', () => {
    const search = searchTool('http://127.0.0.1:9');
    const tools = new TaskToolSet([recall, search]);
    const change = tools.absorb(recallAnswer(appendixDynamicTool(PROXY, 'search')), RECALL);

    expect(change?.rejected).toEqual([
      { index: 0, name: 'search', reason: 'the task already has a tool of that name' },
    ]);
    expect(tools.get('search')).toBe(search);
  });

  it('entries that are not dynamic tools are rejected with the reason, the valid ones still join', () => {
    const tools = new TaskToolSet([recall]);
    const change = tools.absorb(
      {
        _dynamic_tools: [{ name: 'broken', description: 'no url' }, appendixDynamicTool(PROXY)],
      },
      RECALL,
    );

    expect(change?.added).toEqual(['query_object_instances']);
    expect(change?.rejected).toEqual([
      { index: 0, name: 'broken', reason: expect.stringContaining('api_url') },
    ]);
  });

  it('a seed 004 tool with a name that is no function name joins under its legal form', () => {
    const tools = new TaskToolSet([recall]);
    const change = tools.absorb(
      recallAnswer(appendixDynamicTool(PROXY, '根据单个对象类查询对象实例')),
      RECALL,
    );

    expect(change?.added).toHaveLength(1);
    expect(change?.added[0]).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(tools.get(change!.added[0]!)).toMatchObject({ origin: { id: '根据单个对象类查询对象实例' } });
  });

  it('results without _dynamic_tools change nothing, and the tool objects stay the same across steps', () => {
    const tools = new TaskToolSet([recall]);
    tools.absorb(recallAnswer(appendixDynamicTool(PROXY)), RECALL);
    const tool = tools.get('query_object_instances');
    const shown = tools.modelTools();

    for (const result of [{ hits: 3 }, 'text', null, [1, 2], { _dynamic_tools: 'nope' }]) {
      expect(tools.absorb(result, RECALL)).toBeUndefined();
    }
    expect(tools.get('query_object_instances')).toBe(tool);
    expect(tools.modelTools()).toBe(shown);
  });

  it('tools past the per-request limit are rejected', () => {
    const bound = Array.from({ length: MAX_TOOLS_PER_REQUEST - 1 }, (_, i) =>
      searchTool('http://127.0.0.1:9', `search_${i}`),
    );
    const tools = new TaskToolSet([recall, ...bound]);
    const change = tools.absorb(recallAnswer(appendixDynamicTool(PROXY)), RECALL);

    expect(change?.rejected).toEqual([
      {
        index: 0,
        name: 'query_object_instances',
        reason: `the task has ${MAX_TOOLS_PER_REQUEST} tools already`,
      },
    ]);
    expect(tools.size).toBe(MAX_TOOLS_PER_REQUEST);
  });

  it('a third-party tool answering with _dynamic_tools adds nothing: every entry is rejected, naming the policy', () => {
    const tools = new TaskToolSet([recall, searchTool('http://127.0.0.1:9')]);
    const change = tools.absorb(recallAnswer(appendixDynamicTool(PROXY)), 'search');

    expect(change?.added).toEqual([]);
    expect(change?.rejected).toEqual([
      {
        index: 0,
        name: 'query_object_instances',
        reason: expect.stringContaining('not a source of dynamic tools'),
      },
    ]);
    expect(tools.get('query_object_instances')).toBeUndefined();
    expect(tools.names()).toEqual([RECALL, 'search']);
  });

  it('a tool the agent names in dynamic_tool_sources may add tools; a tool the task does not have may not', () => {
    const tools = new TaskToolSet([searchTool('http://127.0.0.1:9')], ['search']);

    expect(tools.absorb(recallAnswer(appendixDynamicTool(PROXY)), 'search')?.added).toEqual([
      'query_object_instances',
    ]);
    expect(tools.mayAddTools('recall_actions')).toBe(false);
    expect(tools.mayAddTools('unknown')).toBe(false);
  });

  it('the model and the events are shown each dynamic tool as it is called, without api_url, fixed_params or original_schema', () => {
    const tool = appendixDynamicTool(PROXY, '根据单个对象类查询对象实例');
    const shown = shownToolResult({ ...recallAnswer(tool, { name: 'broken' } as never), note: 'kept' });
    const tools = new TaskToolSet([recall]);
    const [name] = tools.absorb(recallAnswer(tool), RECALL)!.added;

    expect(shown).toEqual({
      note: 'kept',
      _dynamic_tools: [
        { name, description: tool.description, parameters: tool.parameters },
        { name: 'broken', rejected: 'not a usable dynamic tool' },
      ],
    });
    expect(JSON.stringify(shown)).not.toContain(PROXY);
    expect(shownToolResult({ hits: 3 })).toEqual({ hits: 3 });
  });
});
