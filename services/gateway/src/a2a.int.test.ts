/**
 * The A2A door in-process on real NATS, called by the official `@a2a-js/sdk` client, the test playing the
 * executor (it writes each task's events with the real TaskEventWriter once the gateway has queued it):
 * card discovery, send, stream, get, list, cancel, and a stream killed mid-way and resumed with
 * SubscribeToTask, losing and repeating nothing.
 */
import { randomUUID } from 'node:crypto';
import { SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { decodeJson, openMeshBuckets, TaskEventWriter, TaskStatusStore } from '@agentmesh/bus';
import {
  cancelSubject,
  finalStatusFields,
  ReceivedTask,
  Streams,
  taskReceivedSubject,
  type EventData,
  type EventType,
  type TaskEvent,
} from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-a2a-00112233445566778899';
const ADMIN_KEY = 'admin-key-a2a-8899aabbccddeeff0011';
const ACCOUNT = 'acme';

let nats: NatsServer;
let gw: TestGateway;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let client: Client;

const authFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${ACME_KEY}`);
  return fetch(input, { ...init, headers });
};

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { API_KEYS: `${ACME_KEY}=${ACCOUNT}`, ADMIN_API_KEYS: ADMIN_KEY });
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  const created = await call(gw.url, 'POST', '/v1/admin/agents', {
    headers: { ...bearer(ADMIN_KEY), 'x-account-id': ACCOUNT },
    body: {
      workflow_id: 'helper',
      name: 'Helper',
      description: 'Answers questions',
      sub_agents: ['researcher'],
      model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' },
    },
  });
  expect(created.status).toBe(201);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
    }),
  );
  client = await factory.createFromUrl(`${gw.url}/a2a/helper/`);
});
afterAll(async () => {
  await gw?.stop();
  await nc?.close();
  await nats?.stop();
});

const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
const done = (message: string, output?: unknown): EventData<'done'> => ({
  message,
  steps: 1,
  usage,
  duration_ms: 5,
  ...(output === undefined ? {} : { output }),
});

/** The task the gateway queued for the message `text` (each test sends its own). */
async function queuedTask(text: string): Promise<ReceivedTask> {
  return waitFor(
    async () => {
      const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
        last_by_subj: taskReceivedSubject(ACCOUNT),
      });
      const task = stored ? decodeJson(ReceivedTask, stored.data, 'test') : undefined;
      return task?.input.messages.at(-1)?.content === text ? task : undefined;
    },
    { description: `task for "${text}" queued` },
  );
}

/** Plays the executor of a task: a writer for its one attempt. */
async function executorOf(traceId: string): Promise<TaskEventWriter> {
  return TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 1 });
}

/** Writes the events; a terminal one is followed by the final status, as an attempt writes it. */
async function write(writer: TaskEventWriter, events: [EventType, unknown][]): Promise<void> {
  for (const [type, data] of events) {
    const event = (await writer.emit(type as never, data as never)) as TaskEvent;
    if (event.type === 'done' || event.type === 'error') {
      const statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
      await statuses.update(ACCOUNT, event.trace_id, (current) =>
        current === undefined ? undefined : { ...current, ...finalStatusFields(event) },
      );
    }
  }
}

const send = (text: string, extra: Record<string, unknown> = {}): SendMessageRequest =>
  SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra },
  });

/** A stream response as the test compares it: its kind and JSON. */
const shape = (response: StreamResponse): { kind: string; json: unknown } => ({
  kind: response.payload?.$case ?? 'none',
  json: response.payload === undefined ? undefined : response.payload.value,
});

const textOf = (task: Task): string | undefined => {
  const part = task.artifacts[0]?.parts[0]?.content;
  return part?.$case === 'text' ? part.value : undefined;
};

describe('A2A door with the official SDK client', () => {
  it('discovers the agent from its card: name, description, skills from its tools, streaming, the JSON-RPC interface', async () => {
    const card = await client.getAgentCard();
    expect(card).toMatchObject({ name: 'Helper', description: 'Answers questions' });
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: false });
    expect(card.skills.map((skill) => skill.id)).toEqual(['agent_researcher']);
    expect(card.supportedInterfaces.map((face) => [face.url, face.protocolVersion])).toEqual([
      [`${gw.url}/a2a/helper`, '1.0'],
      [`${gw.url}/a2a/helper`, '0.3'],
    ]);
    const catalogue = await call(gw.url, 'GET', '/.well-known/agent-card.json', {
      headers: bearer(ACME_KEY),
    });
    expect(catalogue.status).toBe(200);
    expect((catalogue.body as { skills: { id: string }[] }).skills.map((skill) => skill.id)).toContain(
      'helper',
    );
    const old = await call(gw.url, 'GET', '/.well-known/agent.json?agent=helper', {
      headers: bearer(ACME_KEY),
    });
    expect(old.body).toMatchObject({ name: 'Helper' });
  });

  it('a blocking send answers the completed task: id the trace id, contextId a new thread, the answer and structured output as the artifact', async () => {
    const text = `send ${randomUUID()}`;
    const answered = client.sendMessage(send(text));
    const queued = await queuedTask(text);
    const writer = await executorOf(queued.task_meta.trace_id);
    await write(writer, [
      ['message_chunk', { delta: '{"n":' }],
      ['done', done('{"n":1}', { n: 1 })],
    ]);
    const task = (await answered) as Task;

    expect(task.id).toBe(queued.task_meta.trace_id);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts[0]?.parts.map((part) => part.content)).toEqual([
      { $case: 'text', value: '{"n":1}' },
      { $case: 'data', value: { n: 1 } },
    ]);
    expect(task.contextId).toBe(queued.task_meta.thread?.thread_id);
    const thread = await call(gw.url, 'GET', `/v1/threads/${task.contextId}`, { headers: bearer(ACME_KEY) });
    expect(thread.status).toBe(200);

    const got = await client.getTask({ tenant: '', id: task.id });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(got)).toBe('{"n":1}');
    const listed = await client.listTasks({
      tenant: '',
      contextId: task.contextId,
      status: 0,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    expect(listed.tasks.map((one) => one.id)).toEqual([task.id]);
  });

  it('a second message in the same context runs in the same thread', async () => {
    const first = `ctx-1 ${randomUUID()}`;
    const answered = client.sendMessage(send(first));
    const queued = await queuedTask(first);
    await write(await executorOf(queued.task_meta.trace_id), [['done', done('one')]]);
    const task = (await answered) as Task;

    const second = `ctx-2 ${randomUUID()}`;
    const again = client.sendMessage(send(second, { contextId: task.contextId }));
    const next = await queuedTask(second);
    expect(next.task_meta.thread?.thread_id).toBe(task.contextId);
    await write(await executorOf(next.task_meta.trace_id), [['done', done('two')]]);
    expect(((await again) as Task).contextId).toBe(task.contextId);
  });

  it('ListTasks pages through a context newest first with the token it gives; a token it did not give is invalid params', async () => {
    const first = `page-1 ${randomUUID()}`;
    const answered = client.sendMessage(send(first));
    const queued = await queuedTask(first);
    await write(await executorOf(queued.task_meta.trace_id), [['done', done('one')]]);
    const task = (await answered) as Task;
    const second = `page-2 ${randomUUID()}`;
    const again = client.sendMessage(send(second, { contextId: task.contextId }));
    const next = await queuedTask(second);
    await write(await executorOf(next.task_meta.trace_id), [['done', done('two')]]);
    const newer = (await again) as Task;
    const list = (pageToken: string) =>
      client.listTasks({
        tenant: '',
        contextId: task.contextId,
        status: 0,
        pageSize: 1,
        pageToken,
        statusTimestampAfter: undefined,
      });

    const one = await list('');
    expect(one.tasks.map((listed) => listed.id)).toEqual([newer.id]);
    expect(one.nextPageToken).not.toBe('');
    const two = await list(one.nextPageToken);
    expect(two.tasks.map((listed) => listed.id)).toEqual([task.id]);
    expect(two.nextPageToken).toBe('');
    await expect(list('not-a-token')).rejects.toThrow(/pageToken/);
  });

  it('when a client sends the same message again, it is answered the same task in the same context', async () => {
    const text = `retry ${randomUUID()}`;
    const request = {
      ...send(text),
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: true,
      },
    };
    const first = (await client.sendMessage(request)) as Task;
    const again = (await client.sendMessage(request)) as Task;
    expect([again.id, again.contextId]).toEqual([first.id, first.contextId]);
    const queued = await queuedTask(text);
    await write(await executorOf(queued.task_meta.trace_id), [['done', done('once')]]);
  });

  it('a stream carries the task, then a status update per event (text, tool calls), the answer artifact and completed', async () => {
    const text = `stream ${randomUUID()}`;
    const collected: StreamResponse[] = [];
    const streamed = (async () => {
      for await (const response of client.sendMessageStream(send(text))) collected.push(response);
    })();
    const queued = await queuedTask(text);
    await write(await executorOf(queued.task_meta.trace_id), [
      ['tool_start', { call_id: 'c1', tool: 'lookup', arguments: { q: 'x' } }],
      ['tool_result', { call_id: 'c1', tool: 'lookup', ok: true, result: { found: 1 }, duration_ms: 3 }],
      ['message_chunk', { delta: 'The ' }],
      ['message_chunk', { delta: 'answer.' }],
      ['done', done('The answer.')],
    ]);
    await streamed;

    expect(collected.map((response) => response.payload?.$case)).toEqual([
      'task',
      'statusUpdate',
      'statusUpdate',
      'statusUpdate',
      'statusUpdate',
      'artifactUpdate',
      'statusUpdate',
    ]);
    const states = collected.flatMap((response) =>
      response.payload?.$case === 'statusUpdate' ? [response.payload.value.status?.state] : [],
    );
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const texts = collected.flatMap((response) => {
      const content =
        response.payload?.$case === 'statusUpdate'
          ? response.payload.value.status?.message?.parts[0]?.content
          : undefined;
      return content?.$case === 'text' ? [content.value] : [];
    });
    expect(texts.join('')).toBe('The answer.');
    const artifact = collected[5]?.payload;
    expect(artifact?.$case === 'artifactUpdate' && artifact.value.artifact?.parts[0]?.content).toEqual({
      $case: 'text',
      value: 'The answer.',
    });
  });

  it('cancel asks the mesh to cancel the task and answers it canceled once the executor stops it', async () => {
    const text = `cancel ${randomUUID()}`;
    const started = (await client.sendMessage({
      ...send(text),
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: true,
      },
    })) as Task;
    expect(started.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const queued = await queuedTask(text);
    const writer = await executorOf(queued.task_meta.trace_id);
    await write(writer, [['message_chunk', { delta: 'working' }]]);
    const signals = nc.subscribe(cancelSubject(ACCOUNT, started.id), { max: 1 });
    const executor = (async () => {
      for await (const _signal of signals) {
        await write(writer, [
          ['error', { code: 'CANCELLED', message: 'cancelled over A2A', retryable: false }],
        ]);
      }
    })();
    const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    await executor;
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.cancelTask({ tenant: '', id: started.id, metadata: undefined })).rejects.toThrow(
      /already ended/,
    );
  });

  it('a stream killed mid-way and resumed with SubscribeToTask from its last cursor loses and repeats nothing', async () => {
    const text = `resume ${randomUUID()}`;
    const killed = new AbortController();
    const stream = client.sendMessageStream(send(text), { signal: killed.signal });
    const first = await stream.next();
    const task = first.value?.payload?.$case === 'task' ? first.value.payload.value : undefined;
    if (task === undefined) throw new Error('the stream did not open with the task');
    // A reference subscriber that stays connected throughout.
    const reference: StreamResponse[] = [];
    const referenceStream = client.resubscribeTask({ tenant: '', id: task.id });
    const referenceOpened = await referenceStream.next();
    const referenceDone = (async () => {
      for await (const response of referenceStream) reference.push(response);
    })();

    const writer = await executorOf(task.id);
    await write(writer, [
      ['message_chunk', { delta: 'one ' }],
      ['message_chunk', { delta: 'two ' }],
      ['message_chunk', { delta: 'three ' }],
    ]);
    const before: StreamResponse[] = [];
    for (;;) {
      const next = await stream.next();
      if (next.done === true) break;
      before.push(next.value);
      if (before.length === 2) break;
    }
    killed.abort();
    await stream.return(undefined);
    // While nobody listens.
    await write(writer, [
      ['tool_start', { call_id: 'c1', tool: 'lookup', arguments: {} }],
      ['tool_result', { call_id: 'c1', tool: 'lookup', ok: true, result: 1, duration_ms: 1 }],
    ]);

    const lastSeen = before.at(-1)?.payload;
    const cursor =
      lastSeen?.$case === 'statusUpdate' ? lastSeen.value.metadata?.agentmesh?.cursor : undefined;
    expect(cursor).toBe('2:0');
    const after: StreamResponse[] = [];
    let snapshot: Task | undefined;
    for await (const response of client.resubscribeTask(
      { tenant: '', id: task.id },
      { serviceParameters: { 'Last-Event-ID': String(cursor) } },
    )) {
      if (response.payload?.$case === 'task') {
        snapshot = response.payload.value;
        continue;
      }
      after.push(response);
      // The tool result (seq 5) is the last event written before: now the task ends.
      const payload = response.payload;
      if (payload?.$case === 'statusUpdate' && payload.value.metadata?.agentmesh?.cursor === '5:0') {
        await write(writer, [['done', done('one two three')]]);
      }
    }
    await referenceDone;

    expect(referenceOpened.value?.payload?.$case).toBe('task');
    expect(snapshot?.metadata?.agentmesh?.cursor).toBe('2:0');
    expect(snapshot?.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const cursors = [...before, ...after].map((response) => {
      const payload = response.payload;
      return payload?.$case === 'statusUpdate' || payload?.$case === 'artifactUpdate'
        ? payload.value.metadata?.agentmesh?.cursor
        : undefined;
    });
    expect(cursors).toEqual(['1:0', '2:0', '3:0', '4:0', '5:0', '6:0', '6:1']);
    expect([...before, ...after].map(shape)).toEqual(reference.map(shape));
  });
  it('a 0.3 client streams with message/stream and resumes with tasks/resubscribe after the cursor it saw last', async () => {
    const text = `legacy ${randomUUID()}`;
    const rpc = (method: string, params: unknown, headers: Record<string, string> = {}) =>
      fetch(`${gw.url}/a2a/helper`, {
        method: 'POST',
        headers: { ...bearer(ACME_KEY), 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
      });
    const frames = async (response: Response) =>
      (await response.text())
        .split('\n\n')
        .filter((frame) => frame.includes('data: '))
        .map((frame) => ({
          id: /^id: (.*)$/m.exec(frame)?.[1],
          result: (
            JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as { result: Record<string, unknown> }
          ).result,
        }));
    const streamed = rpc('message/stream', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }] },
    });
    const queued = await queuedTask(text);
    const traceId = queued.task_meta.trace_id;
    await write(await executorOf(traceId), [
      ['message_chunk', { delta: 'a' }],
      ['message_chunk', { delta: 'b' }],
      ['done', done('ab')],
    ]);
    const seen = await frames(await streamed);
    expect(seen.map((frame) => [frame.id, frame.result.kind])).toEqual([
      [undefined, 'task'],
      ['1:0', 'status-update'],
      ['2:0', 'status-update'],
      ['3:0', 'artifact-update'],
      ['3:1', 'status-update'],
    ]);
    expect(seen.at(-1)?.result).toMatchObject({ taskId: traceId, status: { state: 'completed' } });

    const resumed = await frames(await rpc('tasks/resubscribe', { id: traceId }, { 'last-event-id': '2:0' }));
    expect(resumed.map((frame) => [frame.id, frame.result.kind])).toEqual([
      [undefined, 'task'],
      ['3:0', 'artifact-update'],
      ['3:1', 'status-update'],
    ]);
    const got = (await (await rpc('tasks/get', { id: traceId })).json()) as {
      result: Record<string, unknown>;
    };
    expect(got.result).toMatchObject({ id: traceId, kind: 'task', status: { state: 'completed' } });
  });
});
