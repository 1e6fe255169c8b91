/**
 * The gateway's Responses API door driven by the official `openai` package against the whole mesh
 * (gateway, assembler and an executor as processes on real NATS, a scripted model, a recording API as the
 * tool's upstream):
 * - three turns chained with `previous_response_id`, the first calling a tool (an `agentmesh_tool_call`
 *   item, never a `function_call`), the second streamed: the third turn's model request carries the first
 *   two turns;
 * - a background response whose model holds its answer: retrieved while it runs, cancelled, and the
 *   executor really stops it.
 */
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, taskStatus } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;
let openai: OpenAI;
let releaseHeld: () => void = () => undefined;
const held = new Promise<void>((resolve) => (releaseHeld = resolve));

type Message = { role: string; content?: unknown };
const messagesOf = (body: unknown): Message[] => (body as { messages?: Message[] }).messages ?? [];
const textOf = (message: Message | undefined): string =>
  typeof message?.content === 'string' ? message.content : JSON.stringify(message?.content ?? '');

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/lookup', reply: { status: 200, body: { founded: 2012 } } }],
  });
  model = await startScriptedModel({
    respond: (request) => {
      const messages = messagesOf(request.body);
      const last = messages.at(-1);
      if (textOf(last).includes('hold on')) {
        return { content: 'Still thinking about it.', chunkSize: 6, hold: { afterChunks: 2, until: held } };
      }
      if (last?.role === 'tool') return { content: 'Founded in 2012.', chunkSize: 5 };
      if (textOf(last).includes('When was it founded')) {
        return { toolCalls: [{ name: 'lookup', arguments: { q: 'ByteDance' } }] };
      }
      if (textOf(last).includes('Where')) return { content: 'In Beijing.', chunkSize: 3 };
      return { content: 'Founded in 2012, in Beijing.' };
    },
  });
  mesh = await startMesh({ executors: 1 });
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    name: 'lookup',
    description: 'looks a company up',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execution: { method: 'GET', base_url: `${api.url}/lookup`, param_placement: 'query' },
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'lookup_agent',
    system_prompt: 'You look companies up.',
    model: { model_name: 'scripted', base_url: model.baseUrl },
    tools: ['lookup'],
  });
  openai = new OpenAI({ baseURL: `${mesh.gatewayUrl}/v1`, apiKey: mesh.apiKey, maxRetries: 0 });
}, 180_000);

afterAll(async () => {
  releaseHeld();
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

describe('the Responses API with the official openai client', () => {
  it('three turns chained by previous_response_id: a tool call as an agentmesh item, a streamed turn, and the third model request holds the first two turns', async () => {
    const first = await openai.responses.create({
      model: 'lookup_agent',
      instructions: 'Answer in one sentence.',
      input: 'When was it founded? ByteDance.',
    });
    expect(first.status).toBe('completed');
    expect(first.output_text).toBe('Founded in 2012.');
    const tool = first.output.find((item) => (item.type as string) === 'agentmesh_tool_call') as unknown as {
      name: string;
      arguments: string;
      output: string;
      status: string;
    };
    expect(tool).toMatchObject({ name: 'lookup', status: 'completed' });
    expect(JSON.parse(tool.arguments)).toEqual({ q: 'ByteDance' });
    expect(tool.output).toContain('2012');
    expect(first.output.some((item) => item.type === 'function_call')).toBe(false);
    expect(api.requests.at(-1)?.query).toMatchObject({ q: 'ByteDance' });

    const stream = await openai.responses.create({
      model: 'lookup_agent',
      input: 'Where?',
      previous_response_id: first.id,
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const deltas = events.flatMap((event) =>
      event.type === 'response.output_text.delta' ? [event.delta] : [],
    );
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('In Beijing.');
    const completed = events.at(-1);
    expect(completed?.type).toBe('response.completed');
    const second = (completed as OpenAI.Responses.ResponseCompletedEvent).response;
    expect(second.previous_response_id).toBe(first.id);
    expect(second.conversation?.id).toBe(first.conversation?.id);

    const third = await openai.responses.create({
      model: 'lookup_agent',
      input: 'Say both again.',
      previous_response_id: second.id,
    });
    expect(third.output_text).toBe('Founded in 2012, in Beijing.');
    const toModel = messagesOf(model.requests.at(-1)?.body);
    const said = toModel.map((message) => `${message.role}:${textOf(message)}`);
    // The first two turns, in order, before the third's question.
    const order = [
      'user:When was it founded? ByteDance.',
      'assistant:Founded in 2012.',
      'user:Where?',
      'assistant:In Beijing.',
      'user:Say both again.',
    ].map((line) => said.indexOf(line));
    expect(
      order.every((index) => index >= 0),
      said.join('\n'),
    ).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(toModel[0]).toMatchObject({ role: 'system', content: 'You look companies up.' });
  });

  it('a background response is retrieved while its model holds the answer, and a cancel stops the task', async () => {
    const created = await openai.responses.create({
      model: 'lookup_agent',
      input: 'hold on, think',
      background: true,
    });
    expect(['queued', 'in_progress']).toContain(created.status);
    const traceId = created.id.replace(/^resp_/, '');
    // Polled until the model's first words are in the log (the answer holds after them).
    const running = await waitFor(
      async () => {
        const response = await openai.responses.retrieve(created.id);
        const waiting = response.status === 'queued' || response.status === 'in_progress';
        return response.output_text !== '' || !waiting ? response : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, description: 'the held answer begun' },
    );
    expect(running.status).toBe('in_progress');
    expect('Still thinking about it.'.startsWith(running.output_text)).toBe(true);

    const cancelled = await openai.responses.cancel(created.id);
    expect(cancelled.status).toBe('cancelled');
    expect(await taskStatus(mesh, traceId)).toMatchObject({ status: 'cancelled' });
    expect((await openai.responses.retrieve(created.id)).status).toBe('cancelled');
  });
});
