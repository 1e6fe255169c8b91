import { toModelTool, type ChatMessage, type ToolDefinition } from '@agentmesh/protocol';
import { startScriptedModel, type ModelStep, type ScriptedModel } from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAiChatClient, type ChatRequest } from '../llm/index.js';
import { XmlToolProtocolModel, type XmlToolProtocolOptions } from './xml-tool-protocol-model.js';

const runScript: ToolDefinition = {
  type: 'NATIVE',
  name: 'core__run-script',
  description: 'Runs a script from the scripts directory.',
  parameters: {
    type: 'object',
    properties: {
      scriptPath: { type: 'string' },
      inputData: { type: 'object' },
      timeoutMs: { type: 'integer', minimum: 100 },
    },
    required: ['scriptPath'],
  },
  class_name: 'RunScript',
  origin: { format: 'native', id: 'core:run-script' },
};

const RUN_ACTION = `<ACTION>
  <tool_id>core:run-script</tool_id>
  <inputs>
    <input name="scriptPath"><![CDATA[stats/sum.py]]></input>
    <input name="inputData"><![CDATA[{"values": [1, 2], "note": "a]]b"}]]></input>
    <input name="timeoutMs">500</input>
  </inputs>
</ACTION>`;

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are a test agent.' },
  { role: 'user', content: 'add 1 and 2' },
];

let model: ScriptedModel | undefined;

afterEach(async () => {
  await model?.stop();
  model = undefined;
});

async function adapterFor(script: ModelStep[], options: XmlToolProtocolOptions = {}) {
  model = await startScriptedModel({ script });
  const client = new OpenAiChatClient({ baseUrl: model.baseUrl, timeoutMs: 10_000, maxRetries: 0 });
  let calls = 0;
  const adapter = new XmlToolProtocolModel(client, {
    tools: [runScript],
    newCallId: () => `xml_${++calls}`,
    ...options,
  });
  const content: string[] = [];
  const reasoning: string[] = [];
  const request: ChatRequest = {
    model: 'scripted-model',
    messages: CONVERSATION,
    tools: [toModelTool(runScript)],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    temperature: 0.2,
  };
  const complete = (messages: readonly ChatMessage[] = CONVERSATION) =>
    adapter.complete(
      { ...request, messages },
      { onContentDelta: (delta) => content.push(delta), onReasoningDelta: (delta) => reasoning.push(delta) },
    );
  return { server: model, complete, content, reasoning };
}

const bodyOf = (request: { body: unknown }) =>
  request.body as { messages: ChatMessage[]; tools?: unknown; tool_choice?: unknown; temperature?: number };

describe('the ACTION protocol adapter', () => {
  it('when the model writes prose and an ACTION, only the prose streams and the ACTION becomes a typed tool call', async () => {
    const h = await adapterFor([
      {
        reasoning: 'A script can add.',
        content: `I will run the sum script.\n\n${RUN_ACTION}\n`,
        chunkSize: 3,
        usage: { prompt_tokens: 40, completion_tokens: 30 },
      },
    ]);
    const result = await h.complete();

    expect(h.content.join('')).toBe('I will run the sum script.');
    expect(h.content.join('')).not.toContain('<');
    expect(h.reasoning.join('')).toBe('A script can add.');
    expect(result.message.content).toBe('I will run the sum script.');
    expect(result.message.tool_calls).toEqual([
      {
        id: 'xml_1',
        type: 'function',
        function: {
          name: 'core__run-script',
          arguments: JSON.stringify({
            scriptPath: 'stats/sum.py',
            inputData: { values: [1, 2], note: 'a]]b' },
            timeoutMs: 500,
          }),
        },
      },
    ]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toEqual({ prompt_tokens: 40, completion_tokens: 30, total_tokens: 70 });

    // The model is told about tools in its prompt only: no native tool settings reach the server.
    const sent = bodyOf(h.server.requests[0]!);
    expect(sent.tools).toBeUndefined();
    expect(sent.tool_choice).toBeUndefined();
    expect(sent.temperature).toBe(0.2);
    expect(sent.messages[0]!.content).toContain('You are a test agent.\n\n# Tools');
    expect(sent.messages[0]!.content).toContain(
      '## core:run-script\nRuns a script from the scripts directory.\nParameters (JSON Schema): {"type":"object"',
    );
  });

  it('when the model answers without ACTION, the answer passes through unchanged', async () => {
    const h = await adapterFor([{ content: 'The sum is 3. <b>Done</b>\n', chunkSize: 2 }]);
    const result = await h.complete();
    expect(h.content.join('')).toBe('The sum is 3. <b>Done</b>\n');
    expect(result.message.content).toBe('The sum is 3. <b>Done</b>\n');
    expect(result.message.tool_calls).toBeUndefined();
    expect(result.finishReason).toBe('stop');
  });

  it('when an ACTION cannot be read, the model is asked again with a failure observation and its next reply counts', async () => {
    const broken =
      '<ACTION><tool_id>core:run-script</tool_id><inputs><input>stats/sum.py</input></inputs></ACTION>';
    const h = await adapterFor([
      { content: `Running it.\n${broken}`, usage: { prompt_tokens: 10, completion_tokens: 5 } },
      { content: RUN_ACTION, usage: { prompt_tokens: 20, completion_tokens: 8 } },
    ]);
    const result = await h.complete();

    expect(h.server.requests).toHaveLength(2);
    const retry = bodyOf(h.server.requests[1]!).messages;
    expect(retry.slice(-2)).toEqual([
      { role: 'assistant', content: `Running it.\n${broken}` },
      {
        role: 'user',
        content:
          '<OBSERVATION>Tool core:run-script failed. Error type: ActionFormatError. Message: input #1 has no name attribute. ' +
          'Details: The ACTION was not run; write it again in the format the system prompt describes.</OBSERVATION>',
      },
    ]);
    expect(result.message.tool_calls?.map((call) => call.function.name)).toEqual(['core__run-script']);
    expect(result.usage).toEqual({ prompt_tokens: 30, completion_tokens: 13, total_tokens: 43 });
    expect(result.attempts).toBe(2);
    expect(h.content.join('')).toBe('Running it.');
  });

  it('when one of several ACTIONs is broken, none runs and only the broken one is reported', async () => {
    const h = await adapterFor([
      { content: `${RUN_ACTION}\n<ACTION><inputs></inputs></ACTION>` },
      { content: 'I give up on tools: 3.' },
    ]);
    const result = await h.complete();
    expect(bodyOf(h.server.requests[1]!).messages.at(-1)).toEqual({
      role: 'user',
      content:
        '<OBSERVATION>An ACTION failed. Error type: ActionFormatError. Message: the ACTION has no <tool_id>. ' +
        'Details: None of the 2 ACTION blocks in your reply was run; write them again in the format the system prompt describes.</OBSERVATION>',
    });
    expect(result.message).toMatchObject({ content: 'I give up on tools: 3.' });
    expect(result.message.tool_calls).toBeUndefined();
  });

  it('when the model keeps writing unreadable ACTIONs, after maxRepairs its prose is the answer', async () => {
    const unclosed = 'Trying.\n<ACTION><tool_id>core:run-script</tool_id>';
    const h = await adapterFor([{ content: unclosed }, { content: unclosed }], { maxRepairs: 1 });
    const result = await h.complete();
    expect(h.server.requests).toHaveLength(2);
    expect(bodyOf(h.server.requests[1]!).messages.at(-1)?.content).toBe(
      '<OBSERVATION>Tool core:run-script failed. Error type: ActionFormatError. Message: the ACTION is not closed: there is no </ACTION> after it. ' +
        'Details: The ACTION was not run; write it again in the format the system prompt describes.</OBSERVATION>',
    );
    expect(result.message.content).toBe('Trying.');
    expect(result.message.tool_calls).toBeUndefined();
    expect(h.content.join('')).toBe('Trying.Trying.');
  });

  it('when the model names an unknown tool or writes bad JSON, the calls still come out for the loop to refuse', async () => {
    const h = await adapterFor([
      {
        content:
          '<ACTION><tool_id>core:nope</tool_id></ACTION>' +
          '<ACTION><tool_id>core__run-script</tool_id><inputs><input name="scriptPath">a.py</input>' +
          '<input name="inputData"><![CDATA[{values: [1]}]]></input></inputs></ACTION>',
      },
    ]);
    const result = await h.complete();
    expect(result.message.content).toBeNull();
    expect(result.message.tool_calls?.map((call) => call.function)).toEqual([
      { name: 'core:nope', arguments: '{}' },
      {
        name: 'core__run-script',
        arguments: JSON.stringify({ scriptPath: 'a.py', inputData: '{values: [1]}' }),
      },
    ]);
  });

  it('when maxRepairs is not a non-negative integer, the adapter refuses to be built', () => {
    const client = new OpenAiChatClient({ baseUrl: 'http://127.0.0.1:9/v1' });
    expect(() => new XmlToolProtocolModel(client, { maxRepairs: -1 })).toThrow(RangeError);
    expect(() => new XmlToolProtocolModel(client, { maxRepairs: 1.5 })).toThrow(RangeError);
  });
});
