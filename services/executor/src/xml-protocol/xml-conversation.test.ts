import type { ChatMessage, ToolDefinition } from '@agentmesh/protocol';
import { toModelTool } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { ToolCatalogue } from './tool-catalogue.js';
import { toXmlConversation } from './xml-conversation.js';

const runScript: ToolDefinition = {
  type: 'NATIVE',
  name: 'core__run-script',
  description: 'runs a script',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, input: { type: 'object' }, timeoutMs: { type: 'integer' } },
    required: ['path'],
  },
  class_name: 'RunScript',
  origin: { format: 'native', id: 'core:run-script' },
};
const catalogue = new ToolCatalogue([toModelTool(runScript)], [runScript]);

const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});

describe('the conversation as an ACTION-protocol model reads it', () => {
  it('when tools are offered, the system prompt gains the tool section; without a system prompt one is added', () => {
    const [system] = toXmlConversation(
      [
        { role: 'system', content: 'You are a test agent.' },
        { role: 'user', content: 'hi' },
      ],
      catalogue,
    );
    expect(system?.role).toBe('system');
    expect(system?.content).toMatch(/^You are a test agent\.\n\n# Tools\n/);
    expect(system?.content).toContain('## core:run-script\nruns a script');
    const added = toXmlConversation([{ role: 'user', content: 'hi' }], catalogue);
    expect(added.map((message) => message.role)).toEqual(['system', 'user']);
    expect(toXmlConversation([{ role: 'user', content: 'hi' }], new ToolCatalogue([]))).toEqual([
      { role: 'user', content: 'hi' },
    ]);
  });

  it('when the model called tools, its turn reads back as prose then ACTION blocks, and the results as OBSERVATIONs in call order', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'run it twice' },
      {
        role: 'assistant',
        content: 'Running both.',
        tool_calls: [
          call('c1', 'core__run-script', '{"path":"a.py","input":{"x":"]]>"},"timeoutMs":500}'),
          call('c2', 'core__run-script', '{"path":"b.py"}'),
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"sum":3}' },
      {
        role: 'tool',
        tool_call_id: 'c2',
        content: '{"error":{"code":"TOOL_TIMEOUT","message":"the script ran out of time"}}',
      },
      { role: 'assistant', content: 'Done: 3.' },
    ];
    const converted = toXmlConversation(messages, catalogue).slice(1);
    expect(converted).toEqual([
      { role: 'user', content: 'run it twice' },
      {
        role: 'assistant',
        content: [
          'Running both.',
          '<ACTION>\n  <tool_id>core:run-script</tool_id>\n  <inputs>\n    <input name="path"><![CDATA[a.py]]></input>\n    <input name="input"><![CDATA[{"x":"]]]]><![CDATA[>"}]]></input>\n    <input name="timeoutMs"><![CDATA[500]]></input>\n  </inputs>\n</ACTION>',
          '<ACTION>\n  <tool_id>core:run-script</tool_id>\n  <inputs>\n    <input name="path"><![CDATA[b.py]]></input>\n  </inputs>\n</ACTION>',
        ].join('\n\n'),
      },
      {
        role: 'user',
        content:
          '<OBSERVATION>Tool core:run-script executed successfully. Output: {"sum":3}</OBSERVATION>\n' +
          '<OBSERVATION>Tool core:run-script failed. Error type: TOOL_TIMEOUT. Message: the script ran out of time.</OBSERVATION>',
      },
      { role: 'assistant', content: 'Done: 3.' },
    ]);
  });

  it('when a call failed on input JSON or an unknown tool id, the observation adds what was wrong', () => {
    const messages: ChatMessage[] = [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          call('c1', 'core__run-script', '{"path":"a.py","input":"{x: 1}"}'),
          call('c2', 'core:nope', '{}'),
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: '{"error":{"code":"INVALID_REQUEST","message":"invalid arguments: input: must be object"}}',
      },
      {
        role: 'tool',
        tool_call_id: 'c2',
        content:
          '{"error":{"code":"NOT_FOUND","message":"there is no tool named \\"core:nope\\"; available tools: core__run-script"}}',
      },
    ];
    const observations = toXmlConversation(messages, catalogue).at(-1)?.content as string;
    expect(observations.split('\n')).toEqual([
      expect.stringMatching(
        /^<OBSERVATION>Tool core:run-script failed\. Error type: INVALID_REQUEST\. Message: invalid arguments: input: must be object\. Details: input "input" is not valid JSON \(.+\)<\/OBSERVATION>$/,
      ),
      '<OBSERVATION>Tool core:nope failed. Error type: NOT_FOUND. Message: there is no tool named "core:nope"; available tools: core__run-script. Details: the tool ids are: core:run-script</OBSERVATION>',
    ]);
  });
});
