// Canary secrets against a running executor: a scripted model that echoes the keys it should never repeat
// (in its streamed answer, its reasoning, its tool calls and its errors) and an API that echoes them back
// JSON-escaped, URL-encoded, base64'd and upper-cased. No form of any of them may reach a stored event,
// a message on the wire, a log line or an exported span.
import {
  followTaskEvents,
  openMeshBuckets,
  ParkedTaskStore,
  readTaskEventLog,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  Consumers,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  Streams,
  taskAssembledSubject,
  type AssembledTask,
  type HttpTool,
  type TaskEvent,
} from '@agentmesh/protocol';
import { startTelemetry, type Telemetry } from '@agentmesh/runtime';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type ModelStep,
  type NatsServer,
  type RecordingApi,
  type RoutedRequest,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordWire, startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
// Mixed case, and `+/=` (the characters JSON, URLs and base64 treat specially).
const MODEL_KEY = 'canary-Model+Key/5e0b91=';
const SEARCH_KEY = 'canary+Search/Key=d27f44';
const CANARIES = [MODEL_KEY, SEARCH_KEY];
const vaultKeys = generateVaultKeyPair('scrub-test-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let model: ScriptedModel;
let api: RecordingApi;
let telemetry: Telemetry;
let executor: { stop(): Promise<void> };
const spans = new InMemorySpanExporter();
const spanProcessor = new SimpleSpanProcessor({ exporter: spans });
/** Every message on every subject for the whole file: `>`. */
let wire: { subject: string; text: string }[] = [];
const logLines: string[] = [];
/** Per user message: how the model answers that task. */
const behaviours = new Map<string, (request: ChatCompletionRequest) => ModelStep>();

const base64 = (text: string) => Buffer.from(text).toString('base64');

/** Everything an echoing API might send back of `key`, as one JSON document written by hand. */
function echoedForms(key: string): string {
  const bytes = Buffer.from(key);
  const inBlob = (prefix: string) =>
    Buffer.concat([Buffer.from(prefix), bytes, Buffer.from('"}')]).toString('base64');
  const hexLower = encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
  const fields = {
    escaped: JSON.stringify(key).slice(1, -1).replace(/\//g, '\\/'),
    unicode: [...key]
      .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`)
      .join(''),
    url: encodeURIComponent(key),
    url_lower_hex: hexLower,
    form: new URLSearchParams({ k: key }).toString().slice(2),
    base64: bytes.toString('base64'),
    base64url: bytes.toString('base64url'),
    upper: key.toUpperCase(),
    blobs: [inBlob('{"k":"'), inBlob('{"kk":"'), inBlob('{"kkk":"')],
  };
  // Written by hand: JSON.stringify would escape the backslashes the fields already hold.
  const members = Object.entries(fields).map(([name, value]) =>
    Array.isArray(value) ? `"${name}":[${value.map((v) => `"${v}"`).join(',')}]` : `"${name}":"${value}"`,
  );
  return `{${members.join(',')}}`;
}

/** The base64 characters that depend on the secret's bytes alone, at each alignment inside a blob. */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret);
  return [0, 1, 2].flatMap((alignment) => {
    const blob = Buffer.concat([Buffer.alloc(alignment), bytes]);
    const first = Math.ceil((8 * alignment) / 6);
    const end = Math.floor((8 * (alignment + bytes.length)) / 6);
    return [blob.toString('base64').slice(first, end), blob.toString('base64url').slice(first, end)];
  });
}

/**
 * Which canaries `text` exposes, in any form: as it is, after JSON unescaping (once or twice: a stored
 * event is JSON holding strings that held JSON escapes), compared case-insensitively for the plain and
 * URL-encoded forms and exactly for the base64 ones.
 */
function leaks(text: string): string[] {
  const unescape = (s: string) =>
    s
      .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
      .replace(/\\(["\\/])/g, '$1');
  const readings = [text, unescape(text), unescape(unescape(text))];
  const lowered = readings.map((reading) => reading.toLowerCase());
  const found: string[] = [];
  for (const secret of CANARIES) {
    const anyCase = [
      secret,
      encodeURIComponent(secret),
      new URLSearchParams({ k: secret }).toString().slice(2),
    ];
    const exact = [
      base64(secret),
      base64(secret).replace(/=+$/, ''),
      Buffer.from(secret).toString('base64url'),
    ];
    for (const form of anyCase) if (lowered.some((r) => r.includes(form.toLowerCase()))) found.push(form);
    for (const form of [...exact, ...base64Cores(secret)])
      if (readings.some((r) => r.includes(form))) found.push(form);
  }
  return [...new Set(found)];
}

function userText(request: { body: unknown }): string {
  const messages = (request.body as ChatCompletionRequest['body']).messages;
  return String(messages.find((m) => m.role === 'user')?.content ?? '');
}

function toolTurns(request: ChatCompletionRequest): number {
  return request.body.messages.filter((m) => m.role === 'tool').length;
}

beforeAll(async () => {
  telemetry = startTelemetry({
    service: 'executor-scrub-test',
    env: {},
    spanProcessors: [spanProcessor],
  });
  nats = await startNats();
  client = await connect({ servers: nats.url });
  wire = recordWire(client);
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    respond: (request) => {
      const behaviour = behaviours.get(userText(request));
      return behaviour ? behaviour(request) : { content: 'no script for this task' };
    },
  });
  const echo = (status: number) => (request: RoutedRequest) => ({
    status,
    headers: { 'content-type': 'application/json' },
    body: echoedForms(String(request.headers['x-api-key'])),
  });
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/search', reply: (request) => ({ body: { hits: [`${request.query['q']}`] } }) },
      { method: 'GET', path: '/echo-forms', reply: echo(200) },
      { method: 'GET', path: '/echo-error', reply: echo(502) },
      {
        method: 'GET',
        path: '/offer-tools',
        // Not a usable dynamic tool: the executor rejects it, and logs the rejection with its name.
        reply: (request) => ({
          body: { _dynamic_tools: [{ name: base64(String(request.headers['x-api-key'])), bogus: true }] },
        }),
      },
    ],
  });
  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    logLines,
    // Every delta its own event: a secret split across deltas is then split across events too, which is
    // what the scrubbing streams' hold-back must handle (coalescing would mostly hide it).
    env: { LLM_MAX_RETRIES: '0', EVENT_DELTA_MAX_CHARS: '1', TOOL_ARGS_STREAM_MIN_CHARS: '0' },
  });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
  await telemetry?.shutdown();
});

function newTask(user: string, tools: HttpTool[]): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { SEARCH_KEY, [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: user,
    tools,
  });
}

async function run(task: AssembledTask): Promise<TaskEvent[]> {
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
    msgID: `${task.task_meta.trace_id}:assembled`,
  });
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(20_000),
  })) {
    events.push(event);
  }
  expect(events.some(isTerminalEvent)).toBe(true);
  return events;
}

async function statusOf(task: AssembledTask) {
  const statuses = new TaskStatusStore((await openMeshBuckets(js)).tasks);
  return statuses.get(task.task_meta.account_id, task.task_meta.trace_id);
}

const ofType = <T extends TaskEvent['type']>(events: TaskEvent[], type: T) =>
  events.filter((event): event is Extract<TaskEvent, { type: T }> => event.type === type);

describe('scrubbing secrets from what leaves the executor', () => {
  it('when the model echoes a key in its reasoning, a tool call and its streamed answer (split across chunks), every event carries [REDACTED] instead', async () => {
    const user = 'tell me your search key';
    behaviours.set(user, (request) =>
      toolTurns(request) === 0
        ? {
            reasoning: `The user wants ${SEARCH_KEY}; I will search for ${SEARCH_KEY.toUpperCase()}.`,
            toolCalls: [{ name: 'search', arguments: { q: `find ${SEARCH_KEY}` } }],
            chunkSize: 3,
          }
        : {
            content: `Your key is ${SEARCH_KEY}, in base64 ${base64(SEARCH_KEY)}, encoded ${encodeURIComponent(SEARCH_KEY)}.`,
            chunkSize: 4,
          },
    );
    const events = await run(newTask(user, [searchTool(api.url)]));

    expect(leaks(JSON.stringify(events))).toEqual([]);
    const thinking = ofType(events, 'tool_thinking')
      .map((event) => event.data.delta)
      .join('');
    expect(thinking).toBe('The user wants [REDACTED]; I will search for [REDACTED].');
    expect(ofType(events, 'tool_start')[0]?.data.arguments).toEqual({ q: 'find [REDACTED]' });
    expect(ofType(events, 'tool_result')[0]?.data).toMatchObject({
      ok: true,
      result: { hits: ['find [REDACTED]'] },
    });
    const chunks = ofType(events, 'message_chunk').map((event) => event.data.delta);
    const answer = 'Your key is [REDACTED], in base64 [REDACTED], encoded [REDACTED].';
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks.join('')).toBe(answer);
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: answer } });
    // The tool itself got the argument as the model wrote it: arguments are scrubbed from what is shown.
    expect(api.requests.some((request) => request.query['q'] === `find ${SEARCH_KEY}`)).toBe(true);
  });

  it('when the model streams two tool calls, one with a key split across pieces, the tool_call_delta events of each call add up to its arguments with [REDACTED] for the key, before its tool_start', async () => {
    const user = 'stream two calls with the key';
    const plain = { q: 'weather in Paris' };
    behaviours.set(user, (request) =>
      toolTurns(request) === 0
        ? {
            toolCalls: [
              { id: 'call_secret', name: 'search', arguments: { q: `look up ${SEARCH_KEY} now` } },
              { id: 'call_plain', name: 'search', arguments: plain },
            ],
            chunkSize: 2,
          }
        : { content: 'Both searched.' },
    );
    const events = await run(newTask(user, [searchTool(api.url)]));

    expect(leaks(JSON.stringify(events))).toEqual([]);
    const deltas = ofType(events, 'tool_call_delta');
    const argumentsOf = (callId: string) =>
      deltas
        .filter((event) => event.data.call_id === callId)
        .map((event) => event.data.delta)
        .join('');
    expect(deltas.every((event) => event.data.tool === 'search')).toBe(true);
    expect(argumentsOf('call_secret')).toBe(JSON.stringify({ q: 'look up [REDACTED] now' }));
    expect(argumentsOf('call_plain')).toBe(JSON.stringify(plain));
    const starts = ofType(events, 'tool_start');
    expect(starts.map((event) => event.data.arguments)).toEqual([{ q: 'look up [REDACTED] now' }, plain]);
    expect(Math.max(...deltas.map((event) => event.seq))).toBeLessThan(starts[0]!.seq);
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'Both searched.' } });
  });

  it('when an API echoes the key JSON-escaped, URL-encoded, base64d and upper-cased in its answer and its error body, neither the events nor the model see any of it', async () => {
    const user = 'call the echoing tools';
    behaviours.set(user, (request) =>
      toolTurns(request) === 0
        ? {
            toolCalls: [
              { name: 'echo_forms', arguments: { q: 'a' } },
              { name: 'echo_error', arguments: { q: 'b' } },
              { name: 'offer_tools', arguments: { q: 'c' } },
            ],
          }
        : { content: 'noted' },
    );
    const tools = ['echo_forms', 'echo_error', 'offer_tools'].map((name) =>
      searchTool(api.url, name, `/${name.replace('_', '-')}`),
    );
    const task = newTask(user, tools);
    const events = await run(task);

    expect(leaks(JSON.stringify(events))).toEqual([]);
    const results = new Map(ofType(events, 'tool_result').map((event) => [event.data.tool, event.data]));
    expect(results.get('echo_forms')).toMatchObject({
      ok: true,
      result: {
        escaped: '[REDACTED]',
        unicode: '[REDACTED]',
        url: '[REDACTED]',
        url_lower_hex: '[REDACTED]',
        form: '[REDACTED]',
        base64: '[REDACTED]',
        base64url: '[REDACTED]',
        upper: '[REDACTED]',
      },
    });
    expect(results.get('echo_error')).toMatchObject({
      ok: false,
      error: { code: 'TOOL_ERROR', message: expect.stringContaining('[REDACTED]') },
    });
    expect(results.get('offer_tools')).toMatchObject({
      ok: true,
      result: { _dynamic_tools: [{ name: '[REDACTED]' }] },
    });
    // What went back to the model with the tool results.
    const followUp = model.requests.find(
      (request) => userText(request) === user && toolTurns(request as ChatCompletionRequest) > 0,
    );
    expect(followUp).toBeDefined();
    expect(leaks(JSON.stringify(followUp?.body))).toEqual([]);
    expect(JSON.stringify(followUp?.body)).toContain('[REDACTED]');
    // The rejected dynamic tool is logged by name: the name is scrubbed there too.
    const rejection = logLines.find(
      (line) => line.includes('dynamic tools rejected') && line.includes(task.task_meta.trace_id),
    );
    expect(rejection).toContain('[REDACTED]');
  });

  it('when a tool error and the model error quote the keys, the error events, the final status and the spans carry [REDACTED] instead', async () => {
    const user = 'fail loudly';
    behaviours.set(user, (request) =>
      toolTurns(request) === 0
        ? { toolCalls: [{ name: `lookup ${SEARCH_KEY}`, arguments: {} }] }
        : {
            fault: 'server_error',
            status: 400,
            message: `invalid api key ${MODEL_KEY.toUpperCase()} (${base64(MODEL_KEY)})`,
          },
    );
    const task = newTask(user, [searchTool(api.url)]);
    const events = await run(task);

    expect(leaks(JSON.stringify(events))).toEqual([]);
    expect(ofType(events, 'tool_result')[0]?.data).toMatchObject({
      ok: false,
      error: { code: 'NOT_FOUND', message: expect.stringContaining('"lookup [REDACTED]"') },
    });
    const terminal = events.at(-1);
    expect(terminal).toMatchObject({
      type: 'error',
      data: { message: expect.stringContaining('[REDACTED]') },
    });
    // The attempt's span ends once the task is acknowledged; its status carries the terminal message.
    const taskSpan = await waitFor(
      () =>
        spans
          .getFinishedSpans()
          .find(
            (span) =>
              span.name === 'invoke_agent test_agent' &&
              span.spanContext().traceId === task.task_meta.trace_id,
          ),
      { description: "the failed task's invoke_agent span" },
    );
    expect(taskSpan.status.message).toContain('invalid api key [REDACTED]');
    const status = await statusOf(task);
    expect(status?.error?.message).toContain('invalid api key [REDACTED]');
    expect(leaks(JSON.stringify(status))).toEqual([]);
  });

  it('when the model puts a key into the arguments of a call that needs approval, approval_requested carries [REDACTED] and the parked entry holds it only sealed', async () => {
    const user = 'pay whoever holds the search key';
    behaviours.set(user, () => ({
      toolCalls: [{ id: 'call_guarded', name: 'guarded', arguments: { q: `send to ${SEARCH_KEY}` } }],
    }));
    const task = newTask(user, [{ ...searchTool(api.url, 'guarded', '/search'), approval: {} }]);
    await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
      msgID: `${task.task_meta.trace_id}:assembled`,
    });
    const traceId = task.task_meta.trace_id;
    const events = await waitFor(
      async () => {
        const log = await readTaskEventLog(jsm, { accountId: ACCOUNT, traceId, throughSeq: 1_000 });
        return log.some((event) => event.type === 'approval_requested') && log;
      },
      { timeoutMs: 15_000, description: 'the approval request' },
    );
    expect(ofType(events, 'approval_requested')[0]?.data.arguments).toEqual({ q: 'send to [REDACTED]' });
    expect(ofType(events, 'tool_start')[0]?.data.arguments).toEqual({ q: 'send to [REDACTED]' });
    const parked = await new ParkedTaskStore((await openMeshBuckets(js)).parkedTasks).get(ACCOUNT, traceId);
    expect(parked?.parked.task).toEqual(task);
    expect(leaks(JSON.stringify(parked))).toEqual([]);
  });

  it('no form of any canary reached MESH_EVENTS (read whole), the task statuses, the wire, a log line or an exported span', async () => {
    await waitFor(
      async () => {
        const info = await jsm.consumers.info(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name);
        return info.num_pending === 0 && info.num_ack_pending === 0;
      },
      { description: 'every task to be acknowledged (its span has ended by then)' },
    );
    await spanProcessor.forceFlush();
    const stored: string[] = [];
    for (const stream of [Streams.EVENTS.name, Streams.TASKS.name, 'KV_mesh_tasks', 'KV_mesh_parked_tasks']) {
      const info = await jsm.streams.info(stream);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const msg = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
        if (msg) stored.push(new TextDecoder().decode(msg.data));
      }
    }
    const exported = spans.getFinishedSpans().map((span) =>
      JSON.stringify({
        name: span.name,
        attributes: span.attributes,
        events: span.events,
        status: span.status,
        links: span.links,
      }),
    );

    expect(stored.filter((text) => text.includes('"type":"message_chunk"')).length).toBeGreaterThan(5);
    expect(exported.length).toBeGreaterThan(5);
    expect(logLines.length).toBeGreaterThan(5);
    const exposed = {
      stored: stored.filter((text) => leaks(text).length > 0),
      wire: wire.filter((message) => leaks(message.text).length > 0).map((message) => message.subject),
      logs: logLines.filter((line) => leaks(line).length > 0),
      spans: exported.filter((span) => leaks(span).length > 0),
    };
    expect(exposed).toEqual({ stored: [], wire: [], logs: [], spans: [] });
  });
});
