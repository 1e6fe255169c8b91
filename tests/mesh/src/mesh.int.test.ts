/**
 * The mesh end to end (issue 3's must-shows): gateway, assembler and two executors as real processes
 * on a real NATS server, a scripted model and a recording API standing in for the plugin's upstream.
 */
import { readFileSync } from 'node:fs';
import { Buckets, newTraceId, SseEventName, Streams, type TaskEvent } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, eventTypes, expectStrictlyIncreasing, sseEvents, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const CANARY = {
  QCC_KEY: 'canary-qcc-key-5d1a7e',
  QCC_SECRET: 'canary-qcc-secret-9b22c4',
  MODEL_KEY: 'canary-model-key-3f80aa',
} as const;
const seedPlugin = JSON.parse(
  readFileSync(
    new URL('../../../libs/protocol/src/__fixtures__/seeds/000-s2-plugin.json', import.meta.url),
    'utf8',
  ),
) as Record<string, unknown>;

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;
let nc: NatsConnection;
const busTraffic: string[] = [];

type Message = { role: string; content?: unknown };
const messagesOf = (request: { body: unknown }): Message[] =>
  ((request.body as { messages?: Message[] } | undefined)?.messages ?? []) as Message[];
const lastMessage = (request: { body: unknown }): Message => messagesOf(request).at(-1) ?? { role: 'none' };
const userText = (request: { body: unknown }): string =>
  JSON.stringify(messagesOf(request).find((m) => m.role === 'user'));

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/ECIV4/Search',
        reply: { status: 200, body: { Status: '200', Result: [{ Name: 'ByteDance' }] } },
      },
      { method: 'GET', path: '/broken', reply: { status: 500, body: { error: 'upstream exploded' } } },
    ],
  });
  model = await startScriptedModel({
    respond: (request) =>
      lastMessage(request).role === 'tool'
        ? { content: 'ByteDance was founded in 2012 in Beijing.', chunkSize: 8 }
        : { toolCalls: [{ name: 'search_company_basic', arguments: { keyword: '字节跳动' } }] },
  });
  mesh = await startMesh({ executors: 2 });
  nc = await connect({ servers: mesh.nats.url });
  nc.subscribe('>', {
    callback: (_error, msg) => {
      busTraffic.push(msg.subject, new TextDecoder().decode(msg.data));
      for (const key of msg.headers?.keys() ?? []) busTraffic.push(`${key}: ${msg.headers!.get(key)}`);
    },
  });

  for (const [name, value] of Object.entries(CANARY)) {
    await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/u1/credentials/${name}`, { value });
  }
  await admin(mesh, 'POST', '/plugins', {
    ...seedPlugin,
    execution: { ...(seedPlugin.execution as object), base_url: `${api.url}/ECIV4/Search` },
  });
  await admin(mesh, 'POST', '/plugins', {
    ...seedPlugin,
    name: 'broken_lookup',
    auth_config: undefined,
    execution: { method: 'GET', base_url: `${api.url}/broken`, param_placement: 'query' },
  });
  const agentModel = { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' };
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'qcc_agent',
    system_prompt: 'You look up companies.',
    model: agentModel,
    tools: ['search_company_basic'],
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'broken_agent',
    model: agentModel,
    tools: ['broken_lookup'],
  });
}, 180_000);

afterAll(async () => {
  await nc?.close();
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

async function runTask(text: string, extra: Record<string, unknown> = {}, workflowId = 'qcc_agent') {
  const response = await submit(mesh, {
    workflow_id: workflowId,
    user_id: 'u1',
    messages: [{ role: 'user', content: text }],
    ...extra,
  });
  expect(response.status).toBe(202);
  const reply = (await response.json()) as { trace_id: string; events_subject: string; events_url: string };
  return { reply, events: await sseEvents(mesh, reply.trace_id) };
}

describe('the mesh end to end', () => {
  let qccTrace = '';
  let qccEvents: TaskEvent[] = [];

  it("seed 000's qichacha plugin: the API gets the credential headers and the query, the events run step_finished → tool_start → tool_result → message_chunk… → step_finished → done", async () => {
    const { reply, events } = await runTask('查一下字节跳动');
    qccTrace = reply.trace_id;
    qccEvents = events;
    expect(reply.events_subject).toBe(`mesh.events.${MESH_ACCOUNT}.${reply.trace_id}`);

    // The call's short arguments come whole in its tool_start: no tool_call_delta (TOOL_ARGS_STREAM_MIN_CHARS).
    const types = eventTypes(events);
    expect(types).not.toContain('tool_call_delta');
    expect(types.slice(0, 3)).toEqual(['step_finished', 'tool_start', 'tool_result']);
    expect(types.slice(3, -2).every((type) => type === 'message_chunk')).toBe(true);
    expect(types.filter((type) => type === 'message_chunk').length).toBeGreaterThan(1);
    expect(types.slice(-2)).toEqual(['step_finished', 'done']);
    expect(expectStrictlyIncreasing(events)).toBe(true);
    expect(events.every((event) => event.trace_id === reply.trace_id)).toBe(true);

    const call = api.requests.find(
      (r) => r.path === '/ECIV4/Search' && JSON.stringify(r.query).includes('字节跳动'),
    );
    expect(call?.headers.token).toBe(CANARY.QCC_KEY);
    expect(call?.headers.timespan).toBe(CANARY.QCC_SECRET);
    expect(call?.query).toMatchObject({ keyword: '字节跳动', page_index: '1' });
    const modelCall = model.requests.find((r) => userText(r).includes('查一下字节跳动'));
    expect(modelCall?.headers.authorization).toBe(`Bearer ${CANARY.MODEL_KEY}`);
    expect(JSON.stringify((modelCall?.body as { tools?: unknown }).tools)).not.toContain('base_url');
  });

  it('an SSE client reconnecting with Last-Event-ID gets exactly the rest of the stream', async () => {
    expect(qccEvents.length).toBeGreaterThan(3);
    const rest = await sseEvents(mesh, qccTrace, 2);
    expect(rest).toEqual(qccEvents.filter((event) => event.seq > 2));
  });

  it('a real EventSource client gets the same sequence, resumes with Last-Event-ID, and is told to stop after the end', async () => {
    const follow = (lastEventId?: number) =>
      new Promise<{ events: TaskEvent[]; source: EventSource }>((resolve, reject) => {
        const events: TaskEvent[] = [];
        const source = new EventSource(`${mesh.gatewayUrl}/v1/tasks/${qccTrace}/events`, {
          fetch: (input, init) =>
            fetch(input, {
              ...init,
              headers: {
                ...(init?.headers as Record<string, string>),
                authorization: `Bearer ${mesh.apiKey}`,
                ...(lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }),
              },
            }),
        });
        // The documented SSE names: the mesh's error is `task_error` (EventSource keeps `error`).
        for (const type of Object.values(SseEventName)) {
          source.addEventListener(type, (message) => {
            const event = JSON.parse(message.data) as TaskEvent;
            expect(message.lastEventId).toBe(String(event.seq));
            events.push(event);
            if (type === 'done' || type === 'task_error') resolve({ events, source });
          });
        }
        source.onerror = () => {
          if (source.readyState === EventSource.CLOSED)
            reject(new Error('event source closed before the end'));
        };
      });
    const whole = await follow();
    whole.source.close();
    expect(whole.events).toEqual(qccEvents);
    const rest = await follow(2);
    rest.source.close();
    expect(rest.events).toEqual(qccEvents.filter((event) => event.seq > 2));

    const after = await fetch(`${mesh.gatewayUrl}/v1/tasks/${qccTrace}/events`, {
      headers: { authorization: `Bearer ${mesh.apiKey}`, 'last-event-id': String(qccEvents.at(-1)!.seq) },
    });
    expect(after.status).toBe(204);
  });

  it('an upstream using only NATS submits on mesh.gateway.submit and follows the events subject', async () => {
    const traceId = newTraceId();
    const received: TaskEvent[] = [];
    const done = new Promise<void>((resolve) => {
      nc.subscribe(`mesh.events.${MESH_ACCOUNT}.${traceId}`, {
        callback: (_error, msg) => {
          const event = msg.json<TaskEvent>();
          received.push(event);
          if (event.type === 'done' || event.type === 'error') resolve();
        },
      });
    });
    const headers = natsHeaders();
    headers.set('x-account-id', MESH_ACCOUNT);
    headers.set('x-account-type', 'user');
    const reply = await nc.request(
      'mesh.gateway.submit',
      JSON.stringify({
        workflow_id: 'qcc_agent',
        user_id: 'u1',
        trace_id: traceId,
        messages: [{ role: 'user', content: 'NATS only' }],
      }),
      { headers, timeout: 10_000 },
    );
    expect(reply.json<{ trace_id: string }>().trace_id).toBe(traceId);
    await done;
    expect(eventTypes(received)).toEqual(eventTypes(await sseEvents(mesh, traceId)));
    expect(received.at(-1)?.type).toBe('done');
  });

  it('a missing credential ends the task with CREDENTIALS_MISSING naming the key', async () => {
    const response = await submit(mesh, {
      workflow_id: 'qcc_agent',
      user_id: 'nobody',
      messages: [{ role: 'user', content: 'x' }],
    });
    const { trace_id } = (await response.json()) as { trace_id: string };
    const events = await sseEvents(mesh, trace_id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'error', data: { code: 'CREDENTIALS_MISSING' } });
    expect(JSON.stringify(events[0])).toContain('QCC_KEY');
  });

  it('a task naming an unknown agent is refused at submit with 404 NOT_FOUND, and no task is created', async () => {
    const response = await submit(mesh, {
      workflow_id: 'no_such_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      code: 'NOT_FOUND',
      detail: { workflow_id: 'no_such_agent' },
    });
  });

  it('a malformed submission is refused with 400 and the zod path of the problem', async () => {
    const response = await submit(mesh, {
      workflow_id: 'qcc_agent',
      user_id: 'u1',
      messages: [{ role: 'wizard', content: 1 }],
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { code: string; message: string; detail: unknown };
    expect(body.code).toBe('INVALID_REQUEST');
    expect(JSON.stringify(body.detail)).toContain('messages[0]');
  });

  it('a model answering 429 with Retry-After, then succeeding, still ends with done', async () => {
    model.enqueue({ fault: 'rate_limit', retryAfterSeconds: 1 });
    const before = model.requests.length;
    const { events } = await runTask('rate limited please');
    expect(events.at(-1)?.type).toBe('done');
    expect(model.requests.slice(before).some((r) => r.outcome === 'rate_limit')).toBe(true);
  });

  it('a tool answering 500 gives tool_result ok:false, the model sees the error, and the task goes on', async () => {
    model.enqueue({ toolCalls: [{ name: 'broken_lookup', arguments: { keyword: 'x' } }] });
    const { events } = await runTask('use the broken tool', {}, 'broken_agent');
    const result = events.find((e) => e.type === 'tool_result');
    expect(result?.data).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR' } });
    expect(events.at(-1)?.type).toBe('done');
    const followUp = model.requests.find(
      (r) => userText(r).includes('use the broken tool') && lastMessage(r).role === 'tool',
    );
    expect(JSON.stringify(followUp && lastMessage(followUp))).toContain('500');
  });

  it('invalid tool arguments go back to the model as a tool error, not a crash', async () => {
    model.enqueue({ toolCalls: [{ name: 'search_company_basic', arguments: { page_index: 'first' } }] });
    const { events } = await runTask('bad arguments');
    expect(events.find((e) => e.type === 'tool_result')?.data).toMatchObject({
      ok: false,
      error: { code: 'INVALID_REQUEST' },
    });
    expect(events.at(-1)?.type).toBe('done');
  });

  it('the same idempotency key twice gives the same trace_id and one run', async () => {
    const body = {
      workflow_id: 'qcc_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'once only' }],
      idempotency_key: 'order-42',
    };
    const first = (await (await submit(mesh, body)).json()) as { trace_id: string };
    const second = (await (await submit(mesh, body)).json()) as { trace_id: string };
    expect(second.trace_id).toBe(first.trace_id);
    await sseEvents(mesh, first.trace_id);
    expect(model.requests.filter((r) => userText(r).includes('once only'))).toHaveLength(2);
  });

  it('two executors share 50 tasks: each runs exactly once and ends with one terminal event', async () => {
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        submit(mesh, {
          workflow_id: 'qcc_agent',
          user_id: 'u1',
          messages: [{ role: 'user', content: `bulk-${i}-end` }],
        }),
      ),
    );
    const traces = await Promise.all(
      responses.map(async (r) => ((await r.json()) as { trace_id: string }).trace_id),
    );
    const streams = await Promise.all(traces.map((trace) => sseEvents(mesh, trace)));
    for (const events of streams) {
      expect(events.filter((e) => e.type === 'done' || e.type === 'error')).toHaveLength(1);
      expect(events.at(-1)?.type).toBe('done');
    }
    for (let i = 0; i < 50; i++) {
      expect(model.requests.filter((r) => userText(r).includes(`bulk-${i}-end`))).toHaveLength(2);
    }
    const executorsThatWorked = mesh.executors.filter((executor) =>
      executor.logs.some((line) => typeof line.trace_id === 'string' && traces.includes(line.trace_id)),
    );
    expect(executorsThatWorked.length).toBe(2);
  });

  it('a cancel during a slow model stream ends the task with CANCELLED', async () => {
    model.enqueue({ content: 'x'.repeat(400), chunkSize: 2, chunkDelayMs: 50 });
    const response = await submit(mesh, {
      workflow_id: 'qcc_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'slow' }],
    });
    const { trace_id } = (await response.json()) as { trace_id: string };
    const streaming = sseEvents(mesh, trace_id);
    await waitFor(
      () => busTraffic.some((line) => line.includes(trace_id) && line.includes('message_chunk')),
      {
        timeoutMs: 20_000,
      },
    );
    const cancel = await fetch(`${mesh.gatewayUrl}/v1/tasks/${trace_id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.apiKey}` },
    });
    expect(cancel.status).toBe(202);
    const events = await streaming;
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(events.filter((e) => e.type === 'message_chunk').length).toBeLessThan(200);
  });

  it('a cancel that arrives before the task starts prevents the run', async () => {
    await Promise.all(mesh.executors.map((executor) => executor.stop('SIGTERM')));
    const response = await submit(mesh, {
      workflow_id: 'qcc_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'never run' }],
    });
    const { trace_id } = (await response.json()) as { trace_id: string };
    const cancel = await fetch(`${mesh.gatewayUrl}/v1/tasks/${trace_id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.apiKey}` },
    });
    expect(cancel.status).toBe(202);
    await mesh.addExecutor();
    const events = await sseEvents(mesh, trace_id);
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(model.requests.filter((r) => userText(r).includes('never run'))).toHaveLength(0);
  });

  it('no canary secret appears on any subject, in any stored stream message, or in any log line', async () => {
    const secrets = Object.values(CANARY);
    const traffic = busTraffic.join('\n');
    for (const secret of secrets) expect(traffic).not.toContain(secret);

    const jsm = await jetstreamManager(nc);
    const streams = [
      Streams.TASKS.name,
      Streams.EVENTS.name,
      ...Object.values(Buckets).map((b) => `KV_${b}`),
    ];
    let inspected = 0;
    for (const stream of streams) {
      const info = await jsm.streams.info(stream).catch(() => undefined);
      if (!info) continue;
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const stored = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
        if (!stored) continue;
        inspected++;
        const text = new TextDecoder().decode(stored.data);
        for (const secret of secrets) expect(text, `${stream}#${seq}`).not.toContain(secret);
      }
    }
    expect(inspected).toBeGreaterThan(50);

    const logs = JSON.stringify(mesh.logs());
    for (const secret of secrets) expect(logs).not.toContain(secret);
    expect(mesh.logs().length).toBeGreaterThan(10);
  });
});
