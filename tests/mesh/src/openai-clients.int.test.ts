/**
 * The gateway's OpenAI-compatible façade driven by real OpenAI clients — the official `openai` package and
 * the Vercel AI SDK's OpenAI-compatible provider — against the whole mesh (gateway, assembler and an
 * executor as processes on real NATS, a scripted model, a recording API as the tool's upstream): an agent
 * that calls a tool answers streamed and non-streamed, models are the agents the key may run, and
 * refusals, task errors and a client that leaves are what OpenAI clients understand.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { TaskEvent } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, eventTypes, sseEvents, taskStatus } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const ANSWER = 'ByteDance was founded in 2012 in Beijing, says the lookup.';
const HELD_START = 'The first words arrive, ';
const HELD_REST = 'and the rest waits for the test.';
const KEYED_ANSWER = 'Answered with the account-wide model key.';
const ACCOUNT_MODEL_KEY = 'canary-openai-account-wide-model-key';

let mesh: Mesh;
let model: ScriptedModel;
/** Answers only requests carrying the model key stored for the whole account. */
let keyedModel: ScriptedModel;
let api: RecordingApi;
let openai: OpenAI;
let releaseHeld: () => void = () => undefined;
const held = new Promise<void>((resolve) => (releaseHeld = resolve));

type Message = { role: string; content?: unknown };
const messagesOf = (body: unknown): Message[] => (body as { messages?: Message[] }).messages ?? [];

async function adminFor(account: string, method: string, path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      'x-account-id': account,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
  return response.json();
}

const traceOf = (completionId: string): string => completionId.replace(/^chatcmpl-/, '');

const terminals = (events: TaskEvent[]) => events.filter((e) => e.type === 'done' || e.type === 'error');

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/lookup', reply: { status: 200, body: { founded: 2012 } } }],
  });
  model = await startScriptedModel({
    respond: (request) => {
      const messages = messagesOf(request.body);
      if (JSON.stringify(messages).includes('hold on')) {
        return {
          content: HELD_START + HELD_REST,
          chunkSize: HELD_START.length,
          // The role chunk, then the first words; the rest waits.
          hold: { afterChunks: 2, until: held },
        };
      }
      return messages.at(-1)?.role === 'tool'
        ? { content: ANSWER, chunkSize: 9, reasoning: 'The lookup said 2012.' }
        : { toolCalls: [{ name: 'lookup', arguments: { q: 'ByteDance' } }] };
    },
  });
  mesh = await startMesh({
    executors: 1,
    // One event per streamed delta, so an answer arrives in several chunks.
    env: { gateway: { MAX_RUNNING_TASKS_PER_API_KEY: '1' }, executor: { EVENT_DELTA_MAX_CHARS: '1' } },
  });
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    name: 'lookup',
    description: 'looks a company up',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execution: { method: 'GET', base_url: `${api.url}/lookup`, param_placement: 'query' },
  });
  // The account's own agent, and two from the shared catalogue (an admin key naming no account).
  await adminFor(MESH_ACCOUNT, 'POST', '/agents', {
    workflow_id: 'lookup_agent',
    name: 'Company lookup',
    system_prompt: 'You serve {{region}}.',
    model: { model_name: 'scripted', base_url: model.baseUrl },
    tools: ['lookup'],
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'held_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl },
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'broken_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl },
    tools: ['no_such_tool'],
  });
  keyedModel = await startScriptedModel({
    apiKey: ACCOUNT_MODEL_KEY,
    respond: () => ({ content: KEYED_ANSWER }),
  });
  await adminFor(MESH_ACCOUNT, 'POST', '/agents', {
    workflow_id: 'keyed_agent',
    model: { model_name: 'scripted', base_url: keyedModel.baseUrl, api_key_credential: 'MODEL_KEY' },
  });
  // For the account as a whole: no user has a model key of their own.
  await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/credentials/MODEL_KEY`, { value: ACCOUNT_MODEL_KEY });
  openai = new OpenAI({ baseURL: `${mesh.gatewayUrl}/v1`, apiKey: mesh.apiKey, maxRetries: 0 });
}, 180_000);

afterAll(async () => {
  releaseHeld();
  await mesh?.stop();
  await model?.stop();
  await keyedModel?.stop();
  await api?.stop();
});

describe('the official openai client', () => {
  it('a non-streamed completion from an agent that calls a tool answers the final text, its usage, and the tool call in the agentmesh field', async () => {
    const before = api.requests.length;
    const completion = await openai.chat.completions.create({
      model: 'lookup_agent',
      messages: [
        { role: 'system', content: 'Answer in one sentence.' },
        { role: 'user', content: 'When was ByteDance founded?' },
      ],
      user: 'u-openai',
      // The façade's extension field, sent as an extra body field.
      ...({ variables: { region: 'EMEA' } } as object),
    });

    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('lookup_agent');
    expect(completion.choices[0]).toMatchObject({
      message: { role: 'assistant', content: ANSWER, reasoning_content: 'The lookup said 2012.' },
      finish_reason: 'stop',
    });
    const traceId = traceOf(completion.id);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const events = await sseEvents(mesh, traceId);
    const done = events.at(-1);
    expect(done?.type).toBe('done');
    expect(completion.usage).toEqual(done?.type === 'done' ? done.data.usage : undefined);
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
    const extension = (completion as unknown as { agentmesh: { tool_calls: unknown[] } }).agentmesh;
    expect(extension.tool_calls).toEqual([
      expect.objectContaining({
        tool: 'lookup',
        arguments: { q: 'ByteDance' },
        ok: true,
        result: expect.anything(),
      }),
    ]);
    expect(api.requests.length).toBe(before + 1);
    expect(api.requests.at(-1)?.query).toMatchObject({ q: 'ByteDance' });
    // The client's system message and user reached the model, behind nothing the client did not send.
    const toModel = messagesOf(model.requests.at(-1)?.body);
    expect(toModel.map((message) => message.role)).toEqual(['system', 'system', 'user', 'assistant', 'tool']);
    expect(toModel[0]?.content).toBe('You serve EMEA.');
    expect(toModel[1]?.content).toBe('Answer in one sentence.');
    expect(await taskStatus(mesh, traceId)).toMatchObject({ status: 'done' });
  });

  it('a streamed completion yields the tool call as agentmesh chunks, the answer as content deltas, a stop chunk, then usage', async () => {
    const stream = await openai.chat.completions.create({
      model: 'lookup_agent',
      messages: [{ role: 'user', content: 'When was ByteDance founded? Stream it.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(ANSWER);
    expect(chunks.filter((chunk) => (chunk.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThan(
      1,
    );
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    const toolEvents = chunks
      .map((chunk) => (chunk as unknown as { agentmesh?: { event?: string; tool?: string } }).agentmesh)
      .filter((extension) => extension?.event !== undefined);
    expect(toolEvents).toEqual([
      expect.objectContaining({ event: 'tool_start', tool: 'lookup', arguments: { q: 'ByteDance' } }),
      expect.objectContaining({ event: 'tool_result', tool: 'lookup', ok: true }),
    ]);
    const finishing = chunks.findIndex((chunk) => chunk.choices[0]?.finish_reason === 'stop');
    expect(finishing).toBe(chunks.length - 2);
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    const events = await sseEvents(mesh, traceOf(usageChunk.id));
    const done = events.at(-1);
    expect(usageChunk.usage).toEqual(done?.type === 'done' ? done.data.usage : undefined);
  });

  it('a completion without `user` runs as user default, whose task gets the model key stored only for the whole account, and finishes', async () => {
    const ownKeys = await admin(mesh, 'GET', `/accounts/${MESH_ACCOUNT}/users/default/credentials`);
    expect(await ownKeys.json()).toEqual({ names: [] });

    const completion = await openai.chat.completions.create({
      model: 'keyed_agent',
      messages: [{ role: 'user', content: 'Which key reached you?' }],
    });

    expect(completion.choices[0]).toMatchObject({
      finish_reason: 'stop',
      message: { role: 'assistant', content: KEYED_ANSWER },
    });
    expect((await taskStatus(mesh, traceOf(completion.id))).status).toBe('done');
    expect(keyedModel.requests.map((request) => request.headers['authorization'])).toEqual([
      `Bearer ${ACCOUNT_MODEL_KEY}`,
    ]);
  });

  it('models are the agents the key may run: its account`s own (owned by the account) and the shared ones', async () => {
    const models = [];
    for await (const entry of openai.models.list()) models.push(entry);

    expect(models).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: 'lookup_agent', object: 'model', owned_by: MESH_ACCOUNT }),
        expect.objectContaining({ id: 'held_agent', object: 'model', owned_by: 'shared' }),
      ]),
    );
    expect(await openai.models.retrieve('lookup_agent')).toMatchObject({
      id: 'lookup_agent',
      owned_by: MESH_ACCOUNT,
    });
  });

  it('another account`s key neither lists nor runs the agent of this account: 404 model_not_found', async () => {
    const created = (await (await admin(mesh, 'POST', '/api-keys', { account_id: 'globex' })).json()) as {
      api_key: string;
    };
    const stranger = new OpenAI({ baseURL: `${mesh.gatewayUrl}/v1`, apiKey: created.api_key, maxRetries: 0 });

    const models = [];
    for await (const entry of stranger.models.list()) models.push(entry.id);
    const refused = await stranger.chat.completions
      .create({ model: 'lookup_agent', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);

    expect(models).toContain('held_agent');
    expect(models).not.toContain('lookup_agent');
    expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('an unknown model is a 404 NotFoundError with code model_not_found and param model, and no task runs', async () => {
    const requestsBefore = model.requests.length;
    const error = await openai.chat.completions
      .create({ model: 'no_such_agent', messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    const retrieved = await openai.models.retrieve('no_such_agent').catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({
      status: 404,
      code: 'model_not_found',
      param: 'model',
      type: 'invalid_request_error',
    });
    expect(retrieved).toBeInstanceOf(OpenAI.NotFoundError);
    expect(model.requests.length).toBe(requestsBefore);
  });

  it('an unknown API key is a 401 AuthenticationError; a tool message is a 400 BadRequestError naming the message', async () => {
    const stranger = new OpenAI({ baseURL: `${mesh.gatewayUrl}/v1`, apiKey: 'am_not_a_key', maxRetries: 0 });
    const unauthorized = await stranger.models.list().catch((caught: unknown) => caught);
    const badRequest = await openai.chat.completions
      .create({
        model: 'lookup_agent',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'tool', tool_call_id: 'call_1', content: '{}' },
        ],
      })
      .catch((caught: unknown) => caught);

    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(unauthorized).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect(badRequest).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badRequest).toMatchObject({
      status: 400,
      param: 'messages[1].role',
      type: 'invalid_request_error',
    });
  });

  it('a task that fails mid-stream ends the stream with an error chunk the client raises as APIError', async () => {
    const stream = await openai.chat.completions.create({
      model: 'broken_agent',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const chunks: unknown[] = [];
    const error = await (async () => {
      for await (const chunk of stream) chunks.push(chunk);
    })().catch((caught: unknown) => caught);

    expect(chunks.length).toBe(1);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ code: 'not_found', type: 'invalid_request_error' });
    expect((error as Error).message).toContain('no_such_tool');
  });

  it('a client that leaves mid-stream cancels the task: it ends CANCELLED with one terminal event; meanwhile the running cap answers 429 with Retry-After', async () => {
    const stream = await openai.chat.completions.create({
      model: 'held_agent',
      messages: [{ role: 'user', content: 'hold on' }],
      stream: true,
    });
    let traceId = '';
    let seen = '';
    let limited: unknown;
    for await (const chunk of stream) {
      traceId = traceOf(chunk.id);
      seen += chunk.choices[0]?.delta.content ?? '';
      if (seen === '') continue;
      // Asked while the stream is still open, so the held task surely runs: this key may run one at a time.
      // (Asked after leaving, the cancel may already have freed the slot.)
      limited = await openai.chat.completions
        .create({ model: 'lookup_agent', messages: [{ role: 'user', content: 'hi' }] })
        .catch((caught: unknown) => caught);
      break;
    }
    expect(seen).toBe(HELD_START);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited).toMatchObject({ status: 429, code: 'rate_limited', type: 'rate_limit_error' });
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('5');

    await waitFor(async () => (await taskStatus(mesh, traceId)).status === 'cancelled', {
      timeoutMs: 15_000,
      description: 'the task to end cancelled',
    });
    const events = await sseEvents(mesh, traceId);
    expect(terminals(events)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(eventTypes(events)).not.toContain('done');
  });
});

describe('the Vercel AI SDK OpenAI-compatible provider', () => {
  const provider = () =>
    createOpenAICompatible({
      name: 'agentmesh',
      baseURL: `${mesh.gatewayUrl}/v1`,
      apiKey: mesh.apiKey,
      includeUsage: true,
    });

  it('generateText gets the final answer of an agent that called a tool, with usage and finish reason stop', async () => {
    const result = await generateText({
      model: provider()('lookup_agent'),
      prompt: 'When was ByteDance founded?',
      maxRetries: 0,
      // Provider options of the provider's name travel as extra body fields: the task's variables.
      providerOptions: { agentmesh: { variables: { region: 'APAC' } } },
    });

    expect(result.text).toBe(ANSWER);
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(result.reasoningText).toBe('The lookup said 2012.');
    expect(messagesOf(model.requests.at(-1)?.body)[0]?.content).toBe('You serve APAC.');
  });

  it('streamText streams the answer of an agent that called a tool, then its usage', async () => {
    const result = streamText({
      model: provider()('lookup_agent'),
      prompt: 'When was ByteDance founded? Stream it.',
      maxRetries: 0,
    });
    const parts: string[] = [];
    for await (const text of result.textStream) parts.push(text);

    expect(parts.join('')).toBe(ANSWER);
    expect(parts.length).toBeGreaterThan(1);
    expect(await result.finishReason).toBe('stop');
    expect((await result.usage).totalTokens).toBeGreaterThan(0);
  });

  it('an unknown model fails with the gateway`s 404 and OpenAI-shaped message', async () => {
    const error = await generateText({
      model: provider()('no_such_agent'),
      prompt: 'hi',
      maxRetries: 0,
    }).catch((caught: unknown) => caught);

    expect(error).toMatchObject({ statusCode: 404 });
    expect((error as Error).message).toContain('does not exist or you do not have access to it');
  });
});

it('no log line of any service holds the API keys the clients sent', () => {
  const logged = JSON.stringify(mesh.logs());
  expect(logged).toContain('chat completion ended');
  expect(logged).not.toContain(mesh.apiKey);
});
