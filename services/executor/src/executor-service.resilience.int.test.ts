/**
 * Fallback across an agent's models, timeouts and structured output through a running executor on a real
 * NATS server, each model a loopback scripted server with its own key: a first model that answers 429 and
 * then 503 hands the turn to the second (named in step_finished); a 400 does not; a server that accepts
 * and never sends a byte times out on its first byte and hands the turn on; a final answer is validated
 * against the output schema and delivered parsed, corrected once, or refused with OUTPUT_INVALID, with the
 * task's tools still called before it.
 */
import { followTaskEvents } from '@agentmesh/bus';
import {
  isTerminalEvent,
  modelApiKeyVaultEntry,
  newTraceId,
  taskAssembledSubject,
  type AssembledTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';

const FIRST_KEY = 'canary-first-model-key-91a2';
const SECOND_KEY = 'canary-second-model-key-7b3c';
const vaultKeys = generateVaultKeyPair('exec-resilience-1');

/** The fallback is ten times the first model's price, so a turn it answers shows whose price applied. */
const PRICES = {
  'first-model': { input_per_million_usd: 1, output_per_million_usd: 2 },
  'second-model': { input_per_million_usd: 10, output_per_million_usd: 20 },
};

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let first: ScriptedModel;
let second: ScriptedModel;
let api: RecordingApi;
let executor: { stop(): Promise<void> };

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  first = await startScriptedModel({ apiKey: FIRST_KEY });
  second = await startScriptedModel({ apiKey: SECOND_KEY });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/search', reply: { status: 200, body: { hits: 3 } } }],
  });
  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    env: { LLM_MAX_RETRIES: '2', MODEL_PRICES: JSON.stringify(PRICES) },
  });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await Promise.all([first?.stop(), second?.stop(), api?.stop()]);
  await nats?.stop();
});

function twoModelTask(options: Partial<Parameters<typeof assembledTask>[0]> = {}): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: 'acme',
    modelBaseUrl: first.baseUrl,
    model: { model_name: 'first-model' },
    runtimeConfig: {
      fallback_models: [
        { provider: 'openai', model_name: 'second-model', base_url: second.baseUrl, tool_protocol: 'native' },
      ],
    },
    secrets: { [modelApiKeyVaultEntry(0)]: FIRST_KEY, [modelApiKeyVaultEntry(1)]: SECOND_KEY },
    sealFor: vaultKeys,
    userMessage: 'What is 2+2?',
    ...options,
  });
}

async function run(task: AssembledTask): Promise<TaskEvent[]> {
  const account = task.task_meta.account_id;
  await js.publish(taskAssembledSubject(account), JSON.stringify(task));
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: account,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(30_000),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

const stepsOf = (events: TaskEvent[]) => events.flatMap((e) => (e.type === 'step_finished' ? [e.data] : []));

describe('fallback across the agent’s models', () => {
  it('when the first model answers 429 until its retries are spent and then 503, the second answers: the task is done and its step names the second model', async () => {
    const [firstBefore, secondBefore] = [first.requests.length, second.requests.length];
    first.enqueue(
      { fault: 'rate_limit', retryAfterSeconds: 0 },
      { fault: 'rate_limit', retryAfterSeconds: 0 },
      { fault: 'server_error', status: 503 },
    );
    second.enqueue({ content: 'Four, said the second model.' });

    const events = await run(twoModelTask());

    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'Four, said the second model.' },
    });
    expect(stepsOf(events)).toEqual([expect.objectContaining({ model: 'second-model', model_index: 1 })]);
    // The turn is priced at the model that answered it, not the first model's price.
    const usage = stepsOf(events)[0]?.usage;
    if (usage === undefined) throw new Error('no step_finished');
    const cost = (usage.prompt_tokens * 10 + usage.completion_tokens * 20) / 1e6;
    expect(usage.total_tokens).toBeGreaterThan(0);
    expect(stepsOf(events)[0]).toMatchObject({ cost_usd: cost, total_cost_usd: cost });
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { cost_usd: cost } });
    expect(first.requests.slice(firstBefore).map((r) => r.outcome)).toEqual([
      'rate_limit',
      'rate_limit',
      'server_error',
    ]);
    const answered = second.requests.slice(secondBefore);
    expect(answered).toHaveLength(1);
    expect(answered[0]?.body).toMatchObject({ model: 'second-model' });
    expect(answered[0]?.headers['authorization']).toBe(`Bearer ${SECOND_KEY}`);
  });

  it('when the first model answers 400, the task ends LLM_ERROR and the second model is never called', async () => {
    const secondBefore = second.requests.length;
    first.enqueue({
      raw: {
        status: 400,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ error: { message: 'bad request', type: 'invalid_request_error' } }),
      },
    });

    const events = await run(twoModelTask());

    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'LLM_ERROR' } });
    expect(second.requests.length).toBe(secondBefore);
  });

  it('when the first model accepts the connection and never sends a byte, its first-byte timeout ends each attempt and the second model answers', async () => {
    const firstBefore = first.requests.length;
    first.enqueue({ fault: 'hang' }, { fault: 'hang' }, { fault: 'hang' });
    second.enqueue({ content: 'Four, after the silence.' });

    const events = await run(
      twoModelTask({ model: { model_name: 'first-model', first_byte_timeout_ms: 300 } }),
    );

    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'Four, after the silence.' } });
    expect(stepsOf(events)[0]).toMatchObject({ model: 'second-model', model_index: 1 });
    // Every retry of the first model was tried (and timed out) before the turn moved on.
    expect(first.requests.slice(firstBefore).map((r) => r.outcome)).toEqual(['hang', 'hang', 'hang']);
  });
});

describe('structured output', () => {
  const schema = {
    type: 'object',
    properties: { answer: { type: 'integer' }, unit: { type: 'string' } },
    required: ['answer'],
    additionalProperties: false,
  };

  function structuredTask(): AssembledTask {
    return assembledTask({
      traceId: newTraceId(),
      accountId: 'acme',
      modelBaseUrl: first.baseUrl,
      runtimeConfig: { output_schema: schema },
      secrets: { [modelApiKeyVaultEntry(0)]: FIRST_KEY, SEARCH_KEY: 'canary-search-key-0d1e' },
      sealFor: vaultKeys,
      userMessage: 'What is 2+2?',
      tools: [searchTool(api.url)],
    });
  }

  it('when the final answer validates, done carries it parsed as output, and the schema was given to the model as an instruction, not response_format', async () => {
    const before = first.requests.length;
    first.enqueue({ content: '{"answer": 4}' });

    const events = await run(structuredTask());

    expect(events.at(-1)).toMatchObject({ type: 'done', data: { output: { answer: 4 } } });
    const body = first.requests[before]?.body as { messages: { role: string; content: string }[] };
    expect(body).not.toHaveProperty('response_format');
    expect(body).toHaveProperty('tools');
    expect(body.messages[0]?.content).toContain('"additionalProperties":false');
  });

  it('when the model first calls a tool and then answers invalid JSON once, the tool runs, the model is told what failed, and its corrected answer is the output', async () => {
    const before = first.requests.length;
    const searchesBefore = api.requests.length;
    first.enqueue(
      { toolCalls: [{ name: 'search', arguments: '{"q":"2+2"}' }] },
      { content: '{"answer": "four"}' },
      { content: '```json\n{"answer": 4, "unit": "apples"}\n```' },
    );

    const events = await run(structuredTask());

    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { output: { answer: 4, unit: 'apples' }, steps: 3 },
    });
    expect(api.requests.length).toBe(searchesBefore + 1);
    const third = first.requests[before + 2]?.body as { messages: { role: string; content: string }[] };
    expect(third.messages.at(-1)).toMatchObject({ role: 'user' });
    expect(third.messages.at(-1)?.content).toContain('answer: must be integer');
  });

  it('when every answer fails the schema, the task ends OUTPUT_INVALID after the corrections allowed', async () => {
    const before = first.requests.length;
    first.enqueue({ content: 'four' }, { content: '{"answer": 4.5}' }, { content: '{"answer": 4, "x": 1}' });

    const events = await run(structuredTask());

    expect(events.at(-1)).toMatchObject({
      type: 'error',
      data: { code: 'OUTPUT_INVALID', retryable: false },
    });
    expect(first.requests.length - before).toBe(3);
  });
});
