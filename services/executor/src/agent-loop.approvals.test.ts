// The agent loop with tools that need approval: calls are held (announced, not run) and the loop returns
// `parked`; approved calls of a resumed task run without asking; a loop that cannot park refuses them.
// Real scripted model, real recording API, no NATS.
import type { ToolDefinition } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { searchTool } from './__fixtures__/tasks.js';
import { runAgentLoop, type LoopResult, type ProgressEvent } from './agent-loop.js';
import { OpenAiChatClient } from './llm/index.js';
import { resumePointOf, type ResumePoint } from './resume/resume-point.js';
import { toolExecutor } from './tools/tool-dispatch.js';
import { DynamicToolRunner, HttpToolRunner } from './tools/index.js';
import { NativeToolRegistry } from './tools/native/index.js';

let model: ScriptedModel;
let api: RecordingApi;
let http: HttpToolRunner;

beforeEach(async () => {
  model = await startScriptedModel({
    respond: (request) =>
      request.body.messages.some((m) => m.role === 'tool')
        ? { content: 'all done' }
        : {
            toolCalls: [
              { id: 'c_guarded', name: 'guarded', arguments: { q: 'delete everything' } },
              { id: 'c_free', name: 'free', arguments: { q: 'look around' } },
            ],
          },
  });
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/guarded', reply: { body: { deleted: true } } },
      { method: 'GET', path: '/free', reply: { body: { seen: true } } },
    ],
  });
  http = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
});

afterEach(async () => {
  await Promise.all([model.stop(), api.stop(), http.close()]);
});

const tools = (): ToolDefinition[] => [
  { ...searchTool(api.url, 'guarded'), approval: { reason: 'destructive' } },
  searchTool(api.url, 'free'),
];

async function run(options: { parking: boolean; resume?: ResumePoint }) {
  const events: ProgressEvent[] = [];
  const deps = {
    model: new OpenAiChatClient({ baseUrl: model.baseUrl, timeoutMs: 10_000 }),
    executeTool: toolExecutor(
      { http, dynamic: new DynamicToolRunner({ client: http.client }), native: new NativeToolRegistry() },
      { vault: { SEARCH_KEY: 'k' }, account: { id: 'acme' } },
    ),
    emit: (event: ProgressEvent) => {
      if (event.type !== 'tool_call_delta') events.push(event);
    },
  };
  const task = {
    model: { name: 'scripted-model' },
    messages: [{ role: 'user' as const, content: 'clean up' }],
    tools: tools(),
    maxSteps: 5,
    ...(options.resume === undefined ? {} : { resume: options.resume }),
  };
  const signal = new AbortController().signal;
  const outcome: LoopResult = options.parking
    ? await runAgentLoop(task, { ...deps, parking: true }, signal)
    : await runAgentLoop(task, deps, signal);
  return { outcome, events };
}

const paths = () => api.requests.map((request) => request.path);

describe('tool calls that need approval in the agent loop', () => {
  it('the call needing approval is announced and held, the other one runs, and the loop returns parked', async () => {
    const { outcome, events } = await run({ parking: true });
    expect(outcome).toEqual({
      type: 'parked',
      data: {
        held: [
          {
            callId: 'c_guarded',
            tool: 'guarded',
            arguments: { q: 'delete everything' },
            need: { reason: 'destructive' },
          },
        ],
      },
    });
    const calls = events.filter((event) => event.type !== 'step_finished');
    expect(calls.map((event) => [event.type, 'call_id' in event.data ? event.data.call_id : ''])).toEqual([
      ['tool_start', 'c_guarded'],
      ['tool_start', 'c_free'],
      ['tool_result', 'c_free'],
    ]);
    expect(paths()).toEqual(['/free']);
  });

  it('resumed with the call approved, it runs without asking again and the task ends done', async () => {
    const resume = resumePointOf(
      [
        ['tool_start', { call_id: 'c_guarded', tool: 'guarded', arguments: { q: 'delete everything' } }],
        ['tool_start', { call_id: 'c_free', tool: 'free', arguments: { q: 'look around' } }],
        [
          'tool_result',
          { call_id: 'c_free', tool: 'free', ok: true, result: { seen: true }, duration_ms: 1 },
        ],
        [
          'approval_requested',
          {
            call_id: 'c_guarded',
            tool: 'guarded',
            arguments: { q: 'delete everything' },
            reason: 'destructive',
            expires_at: '2030-01-01T00:00:00.000Z',
          },
        ],
        [
          'approval_decided',
          { call_id: 'c_guarded', tool: 'guarded', approved: true, decided_at: '2030-01-01T00:00:00.000Z' },
        ],
      ].map(([type, data], index) => ({
        trace_id: 'a'.repeat(32),
        seq: index + 1,
        ts: '',
        attempt: index < 4 ? 1 : 2,
        type,
        data,
      })) as never,
    );
    const { outcome } = await run({ parking: true, resume });
    expect(outcome).toMatchObject({ type: 'done', data: { message: 'all done' } });
    expect(paths()).toEqual(['/guarded']);
  });

  it('a loop that cannot park refuses the call with a tool error instead of running it', async () => {
    const { outcome, events } = await run({ parking: false });
    expect(outcome).toMatchObject({ type: 'done' });
    expect(paths()).toEqual(['/free']);
    expect(
      events.find((event) => event.type === 'tool_result' && event.data.call_id === 'c_guarded'),
    ).toMatchObject({
      data: { ok: false, error: { code: 'FORBIDDEN', message: expect.stringContaining('needs approval') } },
    });
  });
});
