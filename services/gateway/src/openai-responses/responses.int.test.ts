/**
 * The Responses API door in-process on real NATS, driven by the official `openai` client, the test playing
 * the executor: it writes the task's events with the real TaskEventWriter (and its final status, as an
 * executor does) once the gateway has queued the task, so every answer shape is checked exactly: a whole
 * response, a stream, background + retrieve + cancel, a stream resumed after the client dropped it,
 * structured output, a continued thread, and refusals in OpenAI's shape.
 */
import { decodeJson, openMeshBuckets, TaskEventWriter, TaskStatusStore } from '@agentmesh/bus';
import {
  cancelSubject,
  newTraceId,
  ReceivedTask,
  Streams,
  taskReceivedSubject,
  type EventData,
  type EventType,
} from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from '../__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-responses-0011223344556677';
const ADMIN_KEY = 'admin-key-responses-8899aabbccddeeff';
const ACCOUNT = 'acme';

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;
let openai: OpenAI;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { API_KEYS: `${ACME_KEY}=${ACCOUNT}`, ADMIN_API_KEYS: ADMIN_KEY });
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
  const created = await call(gw.url, 'POST', '/v1/admin/agents', {
    headers: { ...bearer(ADMIN_KEY), 'x-account-id': ACCOUNT },
    body: { workflow_id: 'helper', model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' } },
  });
  expect(created.status).toBe(201);
  openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ACME_KEY, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
const done = (message: string, extra: Partial<EventData<'done'>> = {}): [EventType, unknown] => [
  'done',
  { message, steps: 2, usage, duration_ms: 12, ...extra },
];

/** The next ReceivedTask the gateway queues after `afterSeq` (a stream sequence), once it is on the stream. */
async function nextQueuedTask(afterStreamSeq: number): Promise<{ task: ReceivedTask; streamSeq: number }> {
  return waitFor(
    async () => {
      const stored = await jsm.streams
        .getMessage(Streams.TASKS.name, { last_by_subj: taskReceivedSubject(ACCOUNT) })
        .catch(() => null);
      if (!stored || stored.seq <= afterStreamSeq) return undefined;
      return { task: decodeJson(ReceivedTask, stored.data, 'test'), streamSeq: stored.seq };
    },
    { description: 'a task queued' },
  );
}

let lastQueued = 0;
/** The task the request being made queues: the next on the stream. */
async function queued(): Promise<ReceivedTask> {
  const { task, streamSeq } = await nextQueuedTask(lastQueued);
  lastQueued = streamSeq;
  return task;
}

/** Plays the executor: the events as the task's one attempt; a terminal one ends its status too. */
async function runTask(traceId: string, events: [EventType, unknown][], writer?: TaskEventWriter) {
  const attempt =
    writer ?? (await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 1 }));
  for (const [type, data] of events) {
    await attempt.emit(type as never, data as never);
    if (type === 'done' || type === 'error') {
      await statuses.update(ACCOUNT, traceId, (current) => ({
        ...current!,
        status:
          type === 'done' ? 'done' : (data as { code: string }).code === 'CANCELLED' ? 'cancelled' : 'error',
        attempt: 1,
      }));
    }
  }
  return attempt;
}

describe('POST /v1/responses with the openai client', () => {
  it('a whole response maps instructions, input and user onto a task in a new thread, and answers its reasoning, tool call and answer as output items', async () => {
    const answered = openai.responses.create({
      model: 'helper',
      instructions: 'Be brief.',
      input: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: [{ type: 'input_text', text: 'look it up' }] },
      ],
      user: 'u-42',
      metadata: { ticket: 'T-1' },
      temperature: 0.2,
    });
    const task = await queued();
    const traceId = task.task_meta.trace_id;
    expect(task.task_meta).toMatchObject({ workflow_id: 'helper', user_id: 'u-42' });
    expect(task.input.messages).toEqual([
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
      { role: 'user', content: [{ type: 'text', text: 'look it up' }] },
    ]);
    const threadId = task.task_meta.thread?.thread_id;
    expect(threadId).toMatch(/^th_/);
    await runTask(traceId, [
      ['tool_thinking', { delta: 'thinking' }],
      ['message_chunk', { delta: 'Let me look.' }],
      ['tool_start', { call_id: 'c1', tool: 'lookup', arguments: { q: 'x' } }],
      ['tool_result', { call_id: 'c1', tool: 'lookup', ok: true, result: { found: 1 }, duration_ms: 3 }],
      ['message_chunk', { delta: 'The ' }],
      ['message_chunk', { delta: 'answer.' }],
      done('The answer.'),
    ]);
    const response = await answered;

    expect(response).toMatchObject({
      id: `resp_${traceId}`,
      object: 'response',
      status: 'completed',
      model: 'helper',
      instructions: 'Be brief.',
      metadata: { ticket: 'T-1' },
      conversation: { id: threadId },
      error: null,
      usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18 },
    });
    expect(response.output.map((item) => [item.type, 'phase' in item ? item.phase : undefined])).toEqual([
      ['reasoning', undefined],
      ['message', 'commentary'],
      ['agentmesh_tool_call', undefined],
      ['message', 'final_answer'],
    ]);
    expect(response.output[0]).toMatchObject({ content: [{ type: 'reasoning_text', text: 'thinking' }] });
    expect(response.output[2]).toMatchObject({
      call_id: 'c1',
      name: 'lookup',
      arguments: '{"q":"x"}',
      output: '{"found":1}',
      status: 'completed',
    });
    expect(response.output.some((item) => item.type === 'function_call')).toBe(false);
    expect(response.output_text).toBe('Let me look.The answer.');
  });

  it('a streamed response sends the semantic events in order, numbered from 0 without a gap, and ends with response.completed', async () => {
    const stream = await openai.responses.create({ model: 'helper', input: 'stream it', stream: true });
    const task = await queued();
    const traceId = task.task_meta.trace_id;
    const running = runTask(traceId, [
      ['message_chunk', { delta: 'Hel' }],
      ['message_chunk', { delta: 'lo.' }],
      done('Hello.'),
    ]);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    await running;

    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.id).toBe(`resp_${traceId}`);
    expect(completed.response.output).toEqual([
      expect.objectContaining({
        type: 'message',
        status: 'completed',
        content: [expect.objectContaining({ text: 'Hello.' })],
      }),
    ]);
    expect(events[0]).toMatchObject({ response: { status: 'queued' } });
  });

  it('a background response answers at once, is retrieved while it runs, and a cancel ends it cancelled', async () => {
    const created = await openai.responses.create({ model: 'helper', input: 'take long', background: true });
    expect(created.status).toBe('queued');
    expect(created.background).toBe(true);
    const task = await queued();
    const traceId = task.task_meta.trace_id;
    expect(created.id).toBe(`resp_${traceId}`);
    const writer = await runTask(traceId, [['message_chunk', { delta: 'Working on it' }]]);

    const running = await openai.responses.retrieve(created.id);
    expect(running.status).toBe('in_progress');
    expect(running.output_text).toBe('Working on it');

    // The executor aborts when the cancel signal comes: it writes the task's end.
    const signal = client.subscribe(cancelSubject(ACCOUNT, traceId), { max: 1, timeout: 30_000 });
    const executorStops = (async () => {
      for await (const _ of signal) {
        await runTask(
          traceId,
          [['error', { code: 'CANCELLED', message: 'cancelled', retryable: false }]],
          writer,
        );
      }
    })();
    const cancelled = await openai.responses.cancel(created.id);
    await executorStops;
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.error).toMatchObject({ code: 'cancelled' });
    const after = await openai.responses.retrieve(created.id);
    expect(after.status).toBe('cancelled');
    // Cancelling again answers the response as it ended.
    expect((await openai.responses.cancel(created.id)).status).toBe('cancelled');
    expect((await statuses.get(ACCOUNT, traceId))?.cancel_requested_at).toBeDefined();
  });

  it('a background stream dropped mid-answer resumes with starting_after: nothing lost, nothing repeated', async () => {
    const first = await openai.responses.create({
      model: 'helper',
      input: 'resume me',
      stream: true,
      background: true,
    });
    const task = await queued();
    const traceId = task.task_meta.trace_id;
    const writer = await runTask(traceId, [['message_chunk', { delta: 'one ' }]]);
    const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of first) {
      seen.push(event);
      // The connection drops once the first words arrived.
      if (event.type === 'response.output_text.delta') break;
    }
    await runTask(
      traceId,
      [['message_chunk', { delta: 'two ' }], ['message_chunk', { delta: 'three' }], done('one two three')],
      writer,
    );
    expect(await statuses.get(ACCOUNT, traceId)).toMatchObject({ status: 'done' });

    const resumed = await openai.responses.retrieve(`resp_${traceId}`, {
      stream: true,
      starting_after: seen.at(-1)!.sequence_number,
    });
    for await (const event of resumed) seen.push(event);
    const replay: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.retrieve(`resp_${traceId}`, { stream: true }))
      replay.push(event);

    expect(seen.map((event) => event.sequence_number)).toEqual(seen.map((_, index) => index));
    expect(seen.map((event) => event.type)).toEqual(replay.map((event) => event.type));
    const text = seen.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : []));
    expect(text.join('')).toBe('one two three');
    expect(seen.at(-1)).toMatchObject({ type: 'response.completed', response: { status: 'completed' } });
  });

  it('text.format json_schema becomes the task output schema, and the parsed answer is the output text', async () => {
    const schema = {
      type: 'object',
      properties: { founded: { type: 'integer' } },
      required: ['founded'],
      additionalProperties: false,
    };
    const answered = openai.responses.create({
      model: 'helper',
      input: 'When?',
      text: { format: { type: 'json_schema', name: 'founding', schema, strict: true } },
    });
    const task = await queued();
    expect(task.output_schema).toEqual(schema);
    await runTask(task.task_meta.trace_id, [
      ['message_chunk', { delta: '{"founded":2012}' }],
      done('{"founded":2012}', { output: { founded: 2012 } }),
    ]);
    const response = await answered;
    expect(JSON.parse(response.output_text)).toEqual({ founded: 2012 });
    expect(response.text?.format).toMatchObject({ type: 'json_schema', name: 'founding' });
  });

  it('previous_response_id continues the thread of that response; conversation names a thread', async () => {
    const firstAnswer = openai.responses.create({ model: 'helper', input: 'turn one' });
    const firstTask = await queued();
    await runTask(firstTask.task_meta.trace_id, [done('A1')]);
    const first = await firstAnswer;

    const secondAnswer = openai.responses.create({
      model: 'helper',
      input: 'turn two',
      previous_response_id: first.id,
    });
    const secondTask = await queued();
    expect(secondTask.task_meta.thread?.thread_id).toBe(firstTask.task_meta.thread?.thread_id);
    expect(secondTask.input.messages).toEqual([{ role: 'user', content: 'turn two' }]);
    await runTask(secondTask.task_meta.trace_id, [done('A2')]);
    const second = await secondAnswer;
    expect(second.previous_response_id).toBe(first.id);
    expect(second.conversation?.id).toBe(first.conversation?.id);

    const thirdAnswer = openai.responses.create({
      model: 'helper',
      input: 'turn three',
      conversation: first.conversation!.id,
    });
    const thirdTask = await queued();
    expect(thirdTask.task_meta.thread?.thread_id).toBe(firstTask.task_meta.thread?.thread_id);
    await runTask(thirdTask.task_meta.trace_id, [done('A3')]);
    expect((await thirdAnswer).status).toBe('completed');
  });
});

describe('continuing at once', () => {
  it('a turn sent as soon as the previous answer arrived, before its executor wrote the final status, runs in the thread (not 409)', async () => {
    const firstAnswer = openai.responses.create({ model: 'helper', input: 'quick one' });
    const firstTask = await queued();
    const traceId = firstTask.task_meta.trace_id;
    // The executor stores `done`; its final status write (and the thread's release) has not happened yet.
    const writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 1 });
    await writer.emit('done', { message: 'Q1', steps: 1, usage, duration_ms: 1 });
    const first = await firstAnswer;
    expect((await statuses.get(ACCOUNT, traceId))?.status).not.toBe('done');

    const secondAnswer = openai.responses.create({
      model: 'helper',
      input: 'quick two',
      previous_response_id: first.id,
    });
    const secondTask = await queued();
    expect(secondTask.task_meta.thread?.thread_id).toBe(firstTask.task_meta.thread?.thread_id);
    await runTask(secondTask.task_meta.trace_id, [done('Q2')]);
    expect((await secondAnswer).output_text).toBe('Q2');
  });
});

describe('a client that leaves', () => {
  for (const stream of [false, true]) {
    it(`a response not in the background (${stream ? 'streamed' : 'whole'}) is cancelled when its client leaves before it ends`, async () => {
      const leave = new AbortController();
      const answered = fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { ...bearer(ACME_KEY), 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'helper', input: 'x', stream }),
        signal: leave.signal,
      });
      const task = await queued();
      const traceId = task.task_meta.trace_id;
      const signals = client.subscribe(cancelSubject(ACCOUNT, traceId), { max: 1, timeout: 10_000 });
      await runTask(traceId, [['message_chunk', { delta: 'started' }]]);
      if (stream) {
        // The gateway is streaming: the client reads, then leaves.
        await (await answered).body!.getReader().read();
      }
      leave.abort();
      await answered.catch(() => undefined);

      for await (const message of signals) expect(message.json()).toMatchObject({ trace_id: traceId });
      expect((await statuses.get(ACCOUNT, traceId))?.cancel_requested_at).toEqual(expect.any(String));
    });
  }
});

describe('refusals in OpenAI shape', () => {
  const refusal = async (body: unknown) => {
    const res = await call(gw.url, 'POST', '/v1/responses', { body, headers: bearer(ACME_KEY) });
    return { status: res.status, error: (res.body as { error: Record<string, unknown> }).error };
  };

  it('client tools, replayed function calls, an unknown agent or previous response are refused naming the field', async () => {
    expect(
      await refusal({ model: 'helper', input: 'x', tools: [{ type: 'function', name: 'f' }] }),
    ).toMatchObject({
      status: 400,
      error: { param: 'tools', code: 'invalid_request', type: 'invalid_request_error' },
    });
    expect(
      await refusal({
        model: 'helper',
        input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }],
      }),
    ).toMatchObject({ status: 400, error: { param: 'input[0].type' } });
    expect(await refusal({ model: 'nobody', input: 'x' })).toMatchObject({
      status: 404,
      error: { param: 'model', code: 'model_not_found' },
    });
    expect(
      await refusal({ model: 'helper', input: 'x', previous_response_id: `resp_${newTraceId()}` }),
    ).toMatchObject({
      status: 404,
      error: { param: 'previous_response_id', code: 'not_found' },
    });
    expect(await refusal({ model: 'helper', input: 'x', conversation: 'no_such_thread' })).toMatchObject({
      status: 404,
      error: { param: 'conversation', code: 'not_found' },
    });
    expect(await refusal({ model: 'helper' })).toMatchObject({ status: 400, error: { param: 'input' } });
    const unauthenticated = await call(gw.url, 'GET', `/v1/responses/resp_${newTraceId()}`, {});
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body).toMatchObject({ error: { code: 'invalid_api_key' } });
  });
});
