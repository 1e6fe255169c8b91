import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlainTask } from './plain-loop.js';
import {
  benchReply,
  LONG_ANSWER,
  LONG_ANSWER_DELTAS,
  ONE_TOOL_ANSWER,
  PARALLEL_TOOL_CALLS,
  TEN_TOOLS_ANSWER,
  userMessage,
  Workload,
} from './workloads.js';

// The floor loop against the real scripted model and a real recording API: what the bench's
// workloads stream, and what the floor does with it.
describe('bench workloads through the in-process floor', () => {
  let model: ScriptedModel;
  let api: RecordingApi;
  const run = (text: string) =>
    runPlainTask({ modelBaseUrl: model.baseUrl, toolUrl: `${api.url}/lookup`, userText: text });

  beforeAll(async () => {
    model = await startScriptedModel({ respond: benchReply });
    api = await startRecordingApi({
      routes: [{ method: 'GET', path: '/lookup', reply: { status: 200, body: { founded: 2012 } } }],
    });
  });
  afterAll(async () => {
    await model.stop();
    await api.stop();
  });

  it('the one-tool task calls the tool once and streams its answer as 8 chunks', async () => {
    const before = api.requests.length;
    const result = await run(userMessage(Workload.oneTool, 1));
    expect(result.answer).toBe(ONE_TOOL_ANSWER);
    expect(result.messageChunks).toBe(8);
    expect(api.requests.length - before).toBe(1);
    expect(api.requests.at(-1)?.query).toEqual({ q: 'bytedance' });
  });

  it('the long answer streams 2,000 deltas and calls no tool', async () => {
    const before = api.requests.length;
    const result = await run(userMessage(Workload.longAnswer, 1));
    expect(result.messageChunks).toBe(LONG_ANSWER_DELTAS);
    expect(result.answer).toBe(LONG_ANSWER);
    expect(result.firstChunkMs).toBeGreaterThan(0);
    expect(api.requests.length).toBe(before);
  });

  it('the ten-tools task makes ten different GETs in one turn, then answers', async () => {
    const before = api.requests.length;
    const modelCallsBefore = model.requests.length;
    const result = await run(userMessage(Workload.tenTools, 1));
    expect(result.answer).toBe(TEN_TOOLS_ANSWER);
    const queries = api.requests.slice(before).map((request) => request.query['q']);
    expect(new Set(queries).size).toBe(PARALLEL_TOOL_CALLS);
    // One turn with every call, one with the answer.
    expect(model.requests.length - modelCallsBefore).toBe(2);
  });

  it('a conversation that is no bench workload gets no script, and the floor says so', async () => {
    await expect(run('hello')).rejects.toThrow(/model answered 500/);
  });
});
