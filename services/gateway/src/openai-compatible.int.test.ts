/**
 * The OpenAI-compatible façade in-process on real NATS, the test playing the executor: it writes the
 * task's events with the real TaskEventWriter once the gateway has queued the task, so every answer
 * shape (completion, chunks, task errors, refusals) and a client leaving are checked exactly.
 */
import { decodeJson, TaskEventWriter } from '@agentmesh/bus';
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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-openai-0011223344556677';
const ADMIN_KEY = 'admin-key-openai-8899aabbccddeeff';
const ACCOUNT = 'acme';

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { API_KEYS: `${ACME_KEY}=${ACCOUNT}`, ADMIN_API_KEYS: ADMIN_KEY });
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  const created = await call(gw.url, 'POST', '/v1/admin/agents', {
    headers: { ...bearer(ADMIN_KEY), 'x-account-id': ACCOUNT },
    body: { workflow_id: 'helper', model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' } },
  });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
const done: EventData<'done'> = { message: 'The answer.', steps: 2, usage, duration_ms: 12 };

/** The ReceivedTask the gateway queued under `traceId`, once it is on the stream. */
async function queuedTask(traceId: string): Promise<ReceivedTask> {
  return waitFor(
    async () => {
      const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
        last_by_subj: taskReceivedSubject(ACCOUNT),
      });
      const task = stored ? decodeJson(ReceivedTask, stored.data, 'test') : undefined;
      return task?.task_meta.trace_id === traceId ? task : undefined;
    },
    { description: `task ${traceId} queued` },
  );
}

/** Plays the executor: the events, in order, as the task's one attempt. */
async function runTask(traceId: string, events: [EventType, unknown][]): Promise<void> {
  await queuedTask(traceId);
  const writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 1 });
  for (const [type, data] of events) await writer.emit(type as never, data as never);
}

/**
 * Plays executors dying and resuming: each event is written by the attempt it names, the new attempt
 * with a writer of its own, as a redelivery's executor would.
 */
async function runAttempts(traceId: string, events: [number, EventType, unknown][]): Promise<void> {
  await queuedTask(traceId);
  let writer: TaskEventWriter | undefined;
  let writing = 0;
  for (const [attempt, type, data] of events) {
    if (attempt !== writing) {
      writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt });
      writing = attempt;
    }
    await writer!.emit(type as never, data as never);
  }
}

const resumedAfter = (dropTextAfterSeq: number) => ({
  drop_text_after_seq: dropTextAfterSeq,
  resumed_steps: 1,
  resumed_tool_results: 1,
  rerun_call_ids: [],
});

const completions = (body: unknown, headers: Record<string, string> = bearer(ACME_KEY)) =>
  call(gw.url, 'POST', '/v1/chat/completions', { body, headers });

/** The `data:` payloads of an SSE body, in order. */
const dataLines = (text: string): string[] =>
  text
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => frame.slice('data: '.length));

describe('POST /v1/chat/completions', () => {
  it('maps the request onto the task (messages, user, variables, trace_id) and answers one chat.completion from its events', async () => {
    const traceId = newTraceId();
    const answered = completions({
      model: 'helper',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: [{ type: 'text', text: 'look it up' }] },
      ],
      user: 'u-42',
      variables: { region: 'eu' },
      trace_id: traceId,
      temperature: 0.2,
    });
    const task = await queuedTask(traceId);
    await runTask(traceId, [
      ['tool_thinking', { delta: 'thinking' }],
      ['tool_start', { call_id: 'c1', tool: 'lookup', arguments: { q: 'x' } }],
      ['tool_result', { call_id: 'c1', tool: 'lookup', ok: true, result: { found: 1 }, duration_ms: 3 }],
      ['message_chunk', { delta: 'The ' }],
      ['message_chunk', { delta: 'answer.' }],
      ['done', done],
    ]);
    const res = await answered;

    expect(task.task_meta).toMatchObject({ workflow_id: 'helper', user_id: 'u-42', account_id: ACCOUNT });
    expect(task.input).toEqual({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: [{ type: 'text', text: 'look it up' }] },
      ],
      variables: { region: 'eu' },
    });
    expect(res.status).toBe(200);
    expect(res.headers['x-agentmesh-trace-id']).toBe(traceId);
    expect(res.body).toMatchObject({
      id: `chatcmpl-${traceId}`,
      object: 'chat.completion',
      model: 'helper',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'The answer.', reasoning_content: 'thinking' },
          finish_reason: 'stop',
        },
      ],
      usage,
      agentmesh: {
        trace_id: traceId,
        steps: 2,
        tool_calls: [
          {
            call_id: 'c1',
            tool: 'lookup',
            arguments: { q: 'x' },
            ok: true,
            result: { found: 1 },
            duration_ms: 3,
          },
        ],
      },
    });
  });

  it('the same idempotency_key again answers the first task, and nothing new is queued', async () => {
    const body = {
      model: 'helper',
      messages: [{ role: 'user', content: 'once' }],
      idempotency_key: 'idem-1',
    };
    const first = completions(body);
    const received = await waitFor(async () => {
      const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
        last_by_subj: taskReceivedSubject(ACCOUNT),
      });
      const task = stored ? decodeJson(ReceivedTask, stored.data, 'test') : undefined;
      return task?.idempotency_key === 'idem-1' ? { task, seq: stored!.seq } : undefined;
    });
    const traceId = received.task.task_meta.trace_id;
    await runTask(traceId, [['done', done]]);
    const again = await completions(body);

    expect((await first).body.id).toBe(`chatcmpl-${traceId}`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      id: `chatcmpl-${traceId}`,
      choices: [{ message: { content: 'The answer.' } }],
    });
    const latest = await jsm.streams.getMessage(Streams.TASKS.name, {
      last_by_subj: taskReceivedSubject(ACCOUNT),
    });
    expect(latest?.seq).toBe(received.seq);
  });

  it("a task's error event is the answer: its code's status and OpenAI's error shape", async () => {
    const traceId = newTraceId();
    const answered = completions({
      model: 'helper',
      messages: [{ role: 'user', content: 'x' }],
      trace_id: traceId,
    });
    await runTask(traceId, [
      ['error', { code: 'LLM_ERROR', message: 'the model refused', retryable: false }],
    ]);
    const res = await answered;

    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      error: { message: 'the model refused', type: 'server_error', param: null, code: 'llm_error' },
    });
  });

  it('streamed: a role chunk, content chunks, tool events as agentmesh chunks, a stop chunk, the usage chunk, then [DONE]', async () => {
    const traceId = newTraceId();
    const answered = completions({
      model: 'helper',
      messages: [{ role: 'user', content: 'x' }],
      trace_id: traceId,
      stream: true,
      stream_options: { include_usage: true },
    });
    await runTask(traceId, [
      ['message_chunk', { delta: 'Let me look. ' }],
      ['tool_start', { call_id: 'c1', tool: 'lookup', arguments: { q: 'x' } }],
      ['tool_result', { call_id: 'c1', tool: 'lookup', ok: true, result: 1, duration_ms: 3 }],
      ['message_chunk', { delta: 'Found.' }],
      ['done', done],
    ]);
    const res = await answered;

    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['x-agentmesh-trace-id']).toBe(traceId);
    const data = dataLines(res.text);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((line) => JSON.parse(line) as Record<string, unknown>);
    const identity = { id: `chatcmpl-${traceId}`, object: 'chat.completion.chunk', model: 'helper' };
    expect(chunks).toEqual([
      expect.objectContaining({
        ...identity,
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      }),
      expect.objectContaining({
        choices: [{ index: 0, delta: { content: 'Let me look. ' }, finish_reason: null }],
      }),
      expect.objectContaining({
        choices: [{ index: 0, delta: {}, finish_reason: null }],
        agentmesh: expect.objectContaining({ event: 'tool_start', tool: 'lookup' }),
      }),
      expect.objectContaining({
        agentmesh: expect.objectContaining({ event: 'tool_result', ok: true, result: 1 }),
      }),
      expect.objectContaining({ choices: [{ index: 0, delta: { content: 'Found.' }, finish_reason: null }] }),
      expect.objectContaining({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
      expect.objectContaining({ ...identity, choices: [], usage }),
    ]);
  });

  it('non-streamed, after an executor died mid-answer and a new attempt resumed: content is done.message and the reasoning has no voided thought', async () => {
    const traceId = newTraceId();
    const answered = completions({
      model: 'helper',
      messages: [{ role: 'user', content: 'x' }],
      trace_id: traceId,
    });
    await runAttempts(traceId, [
      [1, 'tool_start', { call_id: 'c1', tool: 'lookup', arguments: { q: 'x' } }],
      [1, 'tool_result', { call_id: 'c1', tool: 'lookup', ok: true, result: 1, duration_ms: 3 }],
      [1, 'tool_thinking', { delta: 'half a thought' }],
      [1, 'message_chunk', { delta: 'The ans' }],
      [2, 'attempt_started', resumedAfter(2)],
      [2, 'tool_thinking', { delta: 'the thought' }],
      [2, 'message_chunk', { delta: 'The answer.' }],
      [2, 'done', done],
    ]);
    const res = await answered;

    expect(res.status).toBe(200);
    expect(res.body.choices[0].message).toEqual({
      role: 'assistant',
      content: done.message,
      refusal: null,
      reasoning_content: 'the thought',
    });
  });

  it('streamed, after a resumption: text the new attempt repeats is not sent twice, and text it changes is retracted by an agentmesh chunk', async () => {
    const streamed = async (events: [number, EventType, unknown][]) => {
      const traceId = newTraceId();
      const answered = completions({
        model: 'helper',
        messages: [{ role: 'user', content: 'x' }],
        trace_id: traceId,
        stream: true,
      });
      await runAttempts(traceId, events);
      const res = await answered;
      expect(res.status).toBe(200);
      const chunks = dataLines(res.text)
        .slice(0, -1)
        .map(
          (line) =>
            JSON.parse(line) as {
              choices: { delta: { content?: string } }[];
              agentmesh?: { event?: string; content_chars?: number };
            },
        );
      // What a plain OpenAI client shows, and what one applying the `retract` extension shows.
      const plain = chunks.map((each) => each.choices[0]?.delta.content ?? '').join('');
      let applied = '';
      for (const each of chunks) {
        const retract = each.agentmesh?.event === 'retract' ? each.agentmesh.content_chars : undefined;
        if (retract !== undefined) applied = [...applied].slice(0, -retract).join('');
        applied += each.choices[0]?.delta.content ?? '';
      }
      return { plain, applied, chunks };
    };
    const repeated = await streamed([
      [1, 'message_chunk', { delta: 'Let me look. ' }],
      [1, 'message_chunk', { delta: 'The ans' }],
      [2, 'attempt_started', resumedAfter(1)],
      [2, 'message_chunk', { delta: 'The ' }],
      [2, 'message_chunk', { delta: 'answer.' }],
      [2, 'done', { ...done, message: 'The answer.' }],
    ]);
    expect(repeated.plain).toBe('Let me look. The answer.');
    expect(repeated.chunks).toContainEqual(
      expect.objectContaining({
        agentmesh: expect.objectContaining({ event: 'attempt_started', attempt: 2 }),
      }),
    );

    const changed = await streamed([
      [1, 'message_chunk', { delta: 'Let me look. ' }],
      [1, 'message_chunk', { delta: 'The ans' }],
      [2, 'attempt_started', resumedAfter(1)],
      [2, 'message_chunk', { delta: 'The reply.' }],
      [2, 'done', { ...done, message: 'The reply.' }],
    ]);
    expect(changed.applied).toBe('Let me look. The reply.');
    expect(changed.chunks).toContainEqual(
      expect.objectContaining({ agentmesh: { event: 'retract', content_chars: 'ans'.length } }),
    );
  });

  it('streamed: an error event mid-stream is one error chunk in OpenAI shape, and the stream ends without [DONE]', async () => {
    const traceId = newTraceId();
    const answered = completions({
      model: 'helper',
      messages: [{ role: 'user', content: 'x' }],
      trace_id: traceId,
      stream: true,
    });
    await runTask(traceId, [
      ['message_chunk', { delta: 'Partial' }],
      ['error', { code: 'TOOL_TIMEOUT', message: 'lookup took too long', retryable: true }],
    ]);
    const data = dataLines((await answered).text);

    expect(data).toHaveLength(3);
    expect(JSON.parse(data[1]!)).toMatchObject({ choices: [{ delta: { content: 'Partial' } }] });
    expect(JSON.parse(data[2]!)).toEqual({
      error: { message: 'lookup took too long', type: 'server_error', param: null, code: 'tool_timeout' },
    });
  });

  for (const stream of [false, true]) {
    it(`a client that leaves before the task ends (${stream ? 'streamed' : 'not streamed'}) cancels it: cancel requested on its status and signalled`, async () => {
      const traceId = newTraceId();
      const signals = client.subscribe(cancelSubject(ACCOUNT, traceId), { max: 1, timeout: 10_000 });
      const leave = new AbortController();
      const answered = fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...bearer(ACME_KEY), 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'helper',
          messages: [{ role: 'user', content: 'x' }],
          trace_id: traceId,
          stream,
        }),
        signal: leave.signal,
      });
      await runTask(traceId, [['message_chunk', { delta: 'started' }]]);
      if (stream) {
        // The gateway has answered the headers and is streaming: the client reads, then leaves.
        const response = await answered;
        const reader = response.body!.getReader();
        await reader.read();
      }
      leave.abort();
      await answered.catch(() => undefined);

      for await (const message of signals) expect(message.json()).toMatchObject({ trace_id: traceId });
      const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
      expect(status.body.cancel_requested_at).toEqual(expect.any(String));
    });
  }

  it('refusals are in OpenAI shape: bad JSON, n > 1, client tools, a tool message, an assistant tool call, an unknown model, no account, a bad key', async () => {
    const refusals = await Promise.all([
      call(gw.url, 'POST', '/v1/chat/completions', { body: '{"model":', headers: bearer(ACME_KEY) }),
      completions({ model: 'helper', messages: [{ role: 'user', content: 'x' }], n: 2 }),
      completions({
        model: 'helper',
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: {} } }],
      }),
      completions({
        model: 'helper',
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
        ],
      }),
      completions({ model: 'nobody', messages: [{ role: 'user', content: 'x' }] }),
      completions({ model: 'helper', messages: [{ role: 'user', content: 'x' }] }, bearer(ADMIN_KEY)),
      completions({ model: 'helper', messages: [{ role: 'user', content: 'x' }] }, bearer('not-a-key')),
      completions({ model: 'helper', messages: [] }),
    ]);

    expect(refusals.map((res) => [res.status, res.body.error.param, res.body.error.code])).toEqual([
      [400, null, 'invalid_request'],
      [400, 'n', 'invalid_request'],
      [400, 'tools', 'invalid_request'],
      [400, 'messages[1].tool_calls', 'invalid_request'],
      [404, 'model', 'model_not_found'],
      [401, null, 'invalid_api_key'],
      [401, null, 'invalid_api_key'],
      [400, 'messages', 'invalid_request'],
    ]);
    for (const res of refusals) {
      expect(Object.keys(res.body)).toEqual(['error']);
      expect(res.body.error).toEqual({
        message: expect.any(String),
        type: res.status === 401 ? 'authentication_error' : 'invalid_request_error',
        param: res.body.error.param,
        code: res.body.error.code,
      });
    }
  });
});

describe('GET /v1/models', () => {
  it('lists the account`s agents in OpenAI`s list shape, and an admin acting for the account sees the same', async () => {
    const byKey = await call(gw.url, 'GET', '/v1/models', { headers: bearer(ACME_KEY) });
    const byAdmin = await call(gw.url, 'GET', '/v1/models', {
      headers: { ...bearer(ADMIN_KEY), 'x-account-id': ACCOUNT },
    });
    const one = await call(gw.url, 'GET', '/v1/models/helper', { headers: bearer(ACME_KEY) });

    expect(byKey.body).toEqual({
      object: 'list',
      data: [
        { id: 'helper', object: 'model', created: 0, owned_by: ACCOUNT, agentmesh: { scope: 'account' } },
      ],
    });
    expect(byAdmin.body).toEqual(byKey.body);
    expect(one.body).toEqual(byKey.body.data[0]);
  });
});

describe('a stopping gateway', () => {
  it('ends open completions without cancelling their tasks: 503 when not streamed, an error chunk when streamed', async () => {
    const stopping = await startTestGateway(nats.url, { API_KEYS: `${ACME_KEY}=${ACCOUNT}` });
    const open = async (stream: boolean) => {
      const traceId = newTraceId();
      const answered = call(stopping.url, 'POST', '/v1/chat/completions', {
        body: { model: 'helper', messages: [{ role: 'user', content: 'x' }], trace_id: traceId, stream },
        headers: bearer(ACME_KEY),
      });
      await runTask(traceId, [['message_chunk', { delta: 'started' }]]);
      return { traceId, answered };
    };
    const plain = await open(false);
    const streamed = await open(true);

    await stopping.stop();
    const [plainAnswer, streamedAnswer] = await Promise.all([plain.answered, streamed.answered]);

    expect(plainAnswer.status).toBe(503);
    expect(plainAnswer.body.error).toMatchObject({ code: 'service_unavailable', type: 'server_error' });
    const data = dataLines(streamedAnswer.text);
    expect(JSON.parse(data.at(-1)!)).toMatchObject({ error: { code: 'service_unavailable' } });
    for (const { traceId } of [plain, streamed]) {
      const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
      expect(status.body.cancel_requested_at).toBeUndefined();
    }
  });
});
