// Attempts that overlap on a real NATS server: a delivery that reaches its `running` write after another
// attempt finished the task, and (further down) a server that stalls past ack_wait while a tool runs and an
// executor process frozen past ack_wait. The status record must end as the terminal event says and stay so,
// and overlapping deliveries must not run the task's work again.
import { ensureMeshStreams, followTaskEvents, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type AssembledTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  startNats,
  startScriptedModel,
  waitFor,
  type NatsServer,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHoldingLink, type HoldingLink } from './__fixtures__/holding-link.js';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { userText } from './__fixtures__/model-requests.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'canary-model-key-attempts-01';
const ACK_WAIT_MS = 1_500;
const vaultKeys = generateVaultKeyPair('exec-attempts-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let statuses: TaskStatusStore;
let model: ScriptedModel;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    respond: (request) => ({ content: `answer to ${userText(request)}`, chunkSize: 8 }),
  });
  await ensureMeshStreams(await jetstreamManager(client));
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

const executorEnv = {
  ACK_WAIT_MS: String(ACK_WAIT_MS),
  ACK_PROGRESS_MS: '300',
  MAX_CONCURRENT_TASKS: '1',
};

async function startExecutor(natsUrl = nats.url): Promise<{ stop(): Promise<void> }> {
  const executor = await startInProcessExecutor({ natsUrl, vaultKeys, env: executorEnv });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= executor.stop());
  cleanups.push(stop);
  return { stop };
}

function newTask(user: string): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: user,
  });
}

async function submit(task: AssembledTask): Promise<void> {
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
    msgID: `${task.task_meta.trace_id}:assembled`,
  });
}

async function eventsOf(task: AssembledTask): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(30_000),
  }))
    events.push(event);
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

describe('the status record never moves backwards', () => {
  it('when a first delivery reaches its running write after a redelivery finished the task, the status ends done and stays done, and the late delivery calls no model', async () => {
    const user = 'late first delivery';
    const task = newTask(user);
    // Executor A takes the first delivery, then everything it sends is held: its status read and write,
    // its heartbeats. The server hands the task to B after ack_wait; B finishes it.
    const link: HoldingLink = await startHoldingLink(nats, taskAssembledSubject(ACCOUNT));
    const late = await startExecutor(link.url);
    // Runs before the executor stops (cleanups run last first): a held executor cannot drain.
    cleanups.push(async () => {
      link.release();
      await late.stop();
      await link.close();
    });
    await submit(task);
    await link.holding;
    await startExecutor();
    const events = await eventsOf(task);
    expect(events.filter(isTerminalEvent)).toEqual([expect.objectContaining({ type: 'done', attempt: 2 })]);
    // B writes the final status once its terminal event is stored.
    await waitFor(async () => (await statuses.get(ACCOUNT, task.task_meta.trace_id))?.status === 'done');

    // A goes on now: its read finds the task done. Stopping it waits for its attempt to be over.
    link.release();
    await late.stop();

    expect(await statuses.get(ACCOUNT, task.task_meta.trace_id)).toMatchObject({
      status: 'done',
      attempt: 2,
    });
    expect(model.requests.filter((request) => userText(request) === user)).toHaveLength(1);
  });
});
