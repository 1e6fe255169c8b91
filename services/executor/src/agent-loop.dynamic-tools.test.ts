// Dynamic tools in the loop (seed 004): a tool result carrying `_dynamic_tools` makes those tools callable from
// the model's next step on, run through the dynamic tool runner against a real recording proxy.
import type { ChatMessage } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
  type ScriptedModelOptions,
} from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appendixDynamicTool, recallAnswer } from './__fixtures__/recall-answers.js';
import { runAgentLoop, type LoopOutcome, type ProgressEvent } from './agent-loop.js';
import { OpenAiChatClient } from './llm/index.js';
import { defineNativeTool, NativeToolRegistry } from './tools/native/index.js';
import type { DynamicToolsChange } from './tools/task-tools.js';
import { toolExecutor } from './tools/tool-dispatch.js';
import { DynamicToolRunner, HttpToolRunner, toolSuccess } from './tools/index.js';

const PROXY_PATH = '/tool-box/box-1/proxy/tool-1';

let model: ScriptedModel | undefined;
let proxy: RecordingApi | undefined;
let http: HttpToolRunner | undefined;

afterEach(async () => {
  await Promise.all([model?.stop(), proxy?.stop(), http?.close()]);
  model = proxy = http = undefined;
});

/** A native stand-in for recall: each call answers the next of `answers`. */
function lookupTool(answers: unknown[]) {
  let call = 0;
  return defineNativeTool({
    name: 'lookup_actions',
    description: 'finds actions',
    className: 'LookupActionsTool',
    input: z.object({ object_id: z.string() }),
    run: async () => toolSuccess(answers[call++]),
  });
}

/**
 * Runs the loop with the stand-in, which the agent names as a source of dynamic tools unless
 * `trusted: false` (then it is any third-party tool).
 */
async function run(
  modelOptions: ScriptedModelOptions,
  answers: (proxyUrl: string) => unknown[],
  { trusted = true }: { trusted?: boolean } = {},
): Promise<{ outcome: LoopOutcome; events: ProgressEvent[]; changes: DynamicToolsChange[] }> {
  model = await startScriptedModel(modelOptions);
  proxy = await startRecordingApi({
    routes: [{ method: 'POST', path: PROXY_PATH, reply: { body: { entries: [{ id: 'disease_000001' }] } } }],
  });
  http = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
  const lookup = lookupTool(answers(`${proxy.url}${PROXY_PATH}`));
  const events: ProgressEvent[] = [];
  const changes: DynamicToolsChange[] = [];
  const outcome = await runAgentLoop(
    {
      model: { name: 'scripted-model' },
      messages: [{ role: 'user', content: 'treat disease_000001' }],
      tools: [lookup.definition],
      maxSteps: 5,
      ...(trusted ? { dynamicToolSources: ['lookup_actions'] } : {}),
    },
    {
      model: new OpenAiChatClient({ baseUrl: model.baseUrl, timeoutMs: 10_000 }),
      executeTool: toolExecutor(
        {
          http,
          dynamic: new DynamicToolRunner({ client: http.client }),
          native: new NativeToolRegistry([lookup]),
        },
        { vault: {}, account: { id: 'acme', type: 'user' } },
      ),
      emit: (event) => events.push(event),
      onDynamicTools: (change) => changes.push(change),
    },
    new AbortController().signal,
  );
  return { outcome, events, changes };
}

const offeredTools = (request: { body: unknown }) =>
  ((request.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name);
const toolMessages = (request: { body: unknown }) =>
  (request.body as { messages: ChatMessage[] }).messages.filter((m) => m.role === 'tool');

describe('dynamic tools in the agent loop', () => {
  it('when a tool the agent does not name as a source answers with _dynamic_tools, the model is offered nothing new and nothing reaches the proxy', async () => {
    const { outcome, changes } = await run(
      {
        script: [
          {
            toolCalls: [{ id: 'call_1', name: 'lookup_actions', arguments: { object_id: 'disease_000001' } }],
          },
          { content: 'Nothing else to do.' },
        ],
      },
      (url) => [recallAnswer(appendixDynamicTool(url))],
      { trusted: false },
    );

    expect(outcome).toMatchObject({ type: 'done' });
    expect(offeredTools(model!.requests[1]!)).toEqual(['lookup_actions']);
    expect(changes).toEqual([
      {
        added: [],
        replaced: [],
        rejected: [
          expect.objectContaining({ reason: expect.stringContaining('not a source of dynamic tools') }),
        ],
      },
    ]);
    expect(proxy!.requests).toEqual([]);
  });

  it('when a tool result carries _dynamic_tools, the model is offered them on its next step, and its call reaches the proxy with merged arguments', async () => {
    const { outcome, events, changes } = await run(
      {
        script: [
          {
            toolCalls: [{ id: 'call_1', name: 'lookup_actions', arguments: { object_id: 'disease_000001' } }],
          },
          {
            toolCalls: [
              {
                id: 'call_2',
                name: 'query_object_instances',
                arguments: { kn_id: 'kn_medical', ot_id: 'disease', limit: 3 },
              },
            ],
          },
          { content: 'One patient record found.' },
        ],
      },
      (url) => [recallAnswer(appendixDynamicTool(url))],
    );

    expect(outcome).toMatchObject({ type: 'done', data: { steps: 3 } });
    expect(offeredTools(model!.requests[0]!)).toEqual(['lookup_actions']);
    expect(offeredTools(model!.requests[1]!)).toEqual(['lookup_actions', 'query_object_instances']);
    expect(changes).toEqual([{ added: ['query_object_instances'], replaced: [], rejected: [] }]);

    const [request] = await proxy!.waitForRequests(1);
    expect(request).toMatchObject({ method: 'POST', path: PROXY_PATH, body: { limit: 3 } });
    expect(request!.headers).toMatchObject({ 'x-http-method-override': 'GET', 'x-account-id': 'test' });
    expect(request!.query).toEqual({ kn_id: 'kn_medical', ot_id: 'disease' });

    expect(events.filter((e) => e.type === 'tool_start' || e.type === 'tool_result')).toEqual([
      expect.objectContaining({
        type: 'tool_start',
        data: expect.objectContaining({ tool: 'lookup_actions' }),
      }),
      expect.objectContaining({
        type: 'tool_result',
        data: expect.objectContaining({ tool: 'lookup_actions', ok: true }),
      }),
      expect.objectContaining({
        type: 'tool_start',
        data: {
          call_id: 'call_2',
          tool: 'query_object_instances',
          arguments: { kn_id: 'kn_medical', ot_id: 'disease', limit: 3 },
        },
      }),
      expect.objectContaining({
        type: 'tool_result',
        data: expect.objectContaining({
          tool: 'query_object_instances',
          ok: true,
          result: { entries: [{ id: 'disease_000001' }] },
        }),
      }),
    ]);
  });

  it('a dynamic tool found twice is offered once, and calls go to the latest definition', async () => {
    const { outcome } = await run(
      {
        script: [
          { toolCalls: [{ name: 'lookup_actions', arguments: { object_id: 'a' } }] },
          { toolCalls: [{ name: 'lookup_actions', arguments: { object_id: 'b' } }] },
          { toolCalls: [{ name: 'query_object_instances', arguments: { kn_id: 'k', ot_id: 'o' } }] },
          { content: 'done' },
        ],
      },
      (url) => [
        recallAnswer(appendixDynamicTool(`${url}?version=1`)),
        recallAnswer(appendixDynamicTool(`${url}?version=2`)),
      ],
    );

    expect(outcome.type).toBe('done');
    expect(offeredTools(model!.requests[2]!)).toEqual(['lookup_actions', 'query_object_instances']);
    const [request] = await proxy!.waitForRequests(1);
    expect(request!.query).toMatchObject({ version: '2' });
  });

  it('a call of a dynamic tool before any result offered it is an unknown tool the model can recover from', async () => {
    const { outcome } = await run(
      {
        script: [
          { toolCalls: [{ name: 'query_object_instances', arguments: { kn_id: 'k', ot_id: 'o' } }] },
          { content: 'I cannot query yet.' },
        ],
      },
      () => [],
    );

    expect(outcome.type).toBe('done');
    const [answer] = toolMessages(model!.requests[1]!);
    expect(JSON.parse(answer!.content as string)).toMatchObject({ error: { code: 'NOT_FOUND' } });
    expect(proxy!.requests).toHaveLength(0);
  });

  it("a dynamic tool's arguments are validated against its parameters before anything is sent", async () => {
    const { outcome } = await run(
      {
        script: [
          { toolCalls: [{ name: 'lookup_actions', arguments: { object_id: 'a' } }] },
          { toolCalls: [{ name: 'query_object_instances', arguments: { kn_id: 'k' } }] },
          { content: 'ot_id was missing.' },
        ],
      },
      (url) => [recallAnswer(appendixDynamicTool(url))],
    );

    expect(outcome.type).toBe('done');
    const answers = toolMessages(model!.requests[2]!);
    expect(JSON.parse(answers[1]!.content as string)).toMatchObject({
      error: { code: 'INVALID_REQUEST', message: expect.stringContaining('ot_id') },
    });
    expect(proxy!.requests).toHaveLength(0);
  });
});
