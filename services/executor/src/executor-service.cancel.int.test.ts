// Cancels the executor must not lose while a task runs: a cancel request is stored in the task's status
// record (mesh_tasks) before it is broadcast, so a broadcast the executor never hears must still end the
// task CANCELLED. Each task here waits in a tool call whose answer never comes, so only a cancel ends it.
import { followTaskEvents, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import {
  cancelSubject,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type AssembledTask,
  type CancelSignal,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startCuttableLink, type CuttableLink } from './__fixtures__/cuttable-link.js';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'model-key-cancel-tests';
const vaultKeys = generateVaultKeyPair('exec-cancel-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let statuses: TaskStatusStore;
let model: ScriptedModel;
let api: RecordingApi;
let link: CuttableLink | undefined;
/** Answers the tool calls held so far, once the test is over. */
const heldToolCalls: (() => void)[] = [];
const instances: RunningService[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  statuses = new TaskStatusStore((await openMeshBuckets(js)).tasks);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    respond: (request: ChatCompletionRequest) => {
      const user = String(request.body.messages.find((m) => m.role === 'user')?.content);
      const answered = request.body.messages.filter((m) => m.role === 'tool').length;
      // `look up N times`: N tool rounds, so N + 1 model calls; any other task searches once.
      const rounds = Number(/^look up (\d+) times$/.exec(user)?.[1] ?? 1);
      if (answered >= rounds) return { content: 'the search is done' };
      return { toolCalls: [{ name: rounds === 1 ? 'search' : 'lookup', arguments: { q: 'anything' } }] };
    },
  });
  api = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/search',
        reply: () =>
          new Promise((resolve) => heldToolCalls.push(() => resolve({ body: { hits: ['late'] } }))),
      },
      { method: 'GET', path: '/lookup', reply: { body: { hits: ['at once'] } } },
    ],
  });
});

afterEach(async () => {
  for (const answer of heldToolCalls.splice(0)) answer();
  await Promise.all(instances.splice(0).map((instance) => instance.stop()));
  await link?.close();
  link = undefined;
});

afterAll(async () => {
  await client?.drain();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
});

async function startInstance(natsUrl = nats.url): Promise<void> {
  instances.push(await startInProcessExecutor({ natsUrl, vaultKeys, env: { TOOL_TIMEOUT_MS: '60000' } }));
}

/** Publishes a task with its queued status, as the gateway stores it. */
async function publishTask(userMessage: string, maxSteps = 5): Promise<AssembledTask> {
  const task = assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { SEARCH_KEY: 'search-key', [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage,
    tools: [searchTool(api.url), searchTool(api.url, 'lookup')],
    maxSteps,
  });
  const { trace_id, account_id, workflow_id, submitted_at } = task.task_meta;
  await statuses.create({
    trace_id,
    account_id,
    workflow_id,
    submitted_at,
    status: 'queued',
    attempt: 0,
    updated_at: submitted_at,
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${trace_id}:assembled` });
  return task;
}

/** Publishes a task and waits until its tool call is held (it is never answered while the test runs). */
async function startTaskInToolCall(): Promise<AssembledTask> {
  const held = heldToolCalls.length;
  const task = await publishTask('search, then answer');
  await waitFor(() => heldToolCalls.length > held, { description: 'the task to call its tool' });
  return task;
}

/** What the gateway's cancel route stores: `cancel_requested_at` in the status record. */
async function storeCancelRequest(task: AssembledTask): Promise<CancelSignal> {
  const requestedAt = new Date().toISOString();
  const { account_id, trace_id } = task.task_meta;
  await statuses.update(account_id, trace_id, (current) =>
    current === undefined
      ? undefined
      : { ...current, cancel_requested_at: requestedAt, updated_at: requestedAt },
  );
  return { account_id, trace_id, requested_at: requestedAt };
}

async function terminalEventOf(task: AssembledTask): Promise<TaskEvent> {
  const signal = AbortSignal.timeout(15_000);
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal,
  })) {
    if (isTerminalEvent(event)) return event;
  }
  throw new Error(`no terminal event for ${task.task_meta.trace_id} within 15 s`);
}

async function finalStatusOf(task: AssembledTask) {
  return waitFor(
    async () => {
      const status = await statuses.get(ACCOUNT, task.task_meta.trace_id);
      return status && ['done', 'error', 'cancelled'].includes(status.status) ? status : undefined;
    },
    { description: `the final status of ${task.task_meta.trace_id}` },
  );
}

describe('cancelling a running task when the executor does not hear the broadcast', () => {
  it('a cancel request stored in the status record with no broadcast ends the running task CANCELLED', async () => {
    await startInstance();
    const task = await startTaskInToolCall();
    await storeCancelRequest(task);

    expect(await terminalEventOf(task)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(await finalStatusOf(task)).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
  });

  it('a cancel sent while the executor is cut off from NATS ends the task CANCELLED once it has reconnected', async () => {
    link = await startCuttableLink({ port: nats.port });
    await startInstance(link.url);
    const task = await startTaskInToolCall();
    const connectionsBefore = link.accepted;

    await link.cut();
    // As the gateway cancels: the request stored, then broadcast — a broadcast the executor cannot hear.
    const signal = await storeCancelRequest(task);
    client.publish(cancelSubject(ACCOUNT, task.task_meta.trace_id), JSON.stringify(signal));
    await client.flush();
    await link.restore();

    expect(await terminalEventOf(task)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(link.accepted).toBeGreaterThan(connectionsBefore);
    expect(await finalStatusOf(task)).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
  });

  it('learning of cancels adds no request per step: a task of five model calls reads its status record once, at its start', async () => {
    await startInstance();
    const statusReads: string[] = [];
    // Direct and stream message gets, with the key in the subject or in the request body.
    const reads = ['$JS.API.*.GET.KV_mesh_tasks.>', '$JS.API.*.GET.KV_mesh_tasks'].map((subject) =>
      client.subscribe(subject, {
        callback: (_error, msg) => void statusReads.push(`${msg.subject} ${msg.string()}`),
      }),
    );
    await client.flush();
    const task = await publishTask('look up 4 times', 6);

    const terminal = await terminalEventOf(task);
    const readsOfTask = statusReads.filter((read) => read.includes(task.task_meta.trace_id));
    for (const subscription of reads) subscription.unsubscribe();

    expect(terminal).toMatchObject({ type: 'done', data: { steps: 5 } });
    expect(api.requests.filter((request) => request.path === '/lookup')).toHaveLength(4);
    expect(readsOfTask).toHaveLength(1);
  });
});
