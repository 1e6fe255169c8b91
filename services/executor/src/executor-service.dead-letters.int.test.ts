/**
 * Dead letters on a real NATS server: a task that runs out of deliveries is copied into MESH_DEAD_LETTERS
 * with its reason, both when the executor sees its last delivery (the MAX_DELIVER_EXCEEDED path) and when
 * the last delivery itself dies unsettled (JetStream's MAX_DELIVERIES advisory, heard by the listener).
 */
import { DeadLetterStore, ensureMeshStreams, followTaskEvents, TaskEventWriter } from '@agentmesh/bus';
import {
  Consumers,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  Streams,
  taskAssembledSubject,
  type AssembledTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startNats,
  startScriptedModel,
  waitFor,
  type NatsServer,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';
import { ensureExecutorConsumer } from './task-consumer.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'canary-model-key-dead-7a1c';
const ACK_WAIT_MS = 1_500;
const vaultKeys = generateVaultKeyPair('dead-letters-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let model: ScriptedModel;
const instances: RunningService[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  model = await startScriptedModel({ apiKey: MODEL_KEY, respond: () => ({ content: 'ok' }) });
  await ensureMeshStreams(jsm);
  // One attempt that does work per task; the consumer's own limit (MAX_DELIVERIES) is two deliveries.
  // A short ack wait so redeliveries come quickly.
  await ensureExecutorConsumer(jsm, {
    maxDeliver: 1,
    maxDeliveries: 2,
    ackWaitMs: ACK_WAIT_MS,
    maxAckPending: 1000,
  });
}, 120_000);

afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.stop()));
});

afterAll(async () => {
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

async function startInstance(): Promise<void> {
  instances.push(
    await startInProcessExecutor({
      natsUrl: nats.url,
      vaultKeys,
      env: {
        MAX_DELIVER: '1',
        MAX_DELIVERIES: '2',
        ACK_WAIT_MS: String(ACK_WAIT_MS),
        ACK_PROGRESS_MS: '300',
        PULL_EXPIRES_MS: '1000',
      },
    }),
  );
}

function newTask(user: string): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: user,
    variables: { city: 'Oslo' },
  });
}

async function publishTask(task: AssembledTask): Promise<number> {
  const ack = await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
    msgID: `${task.task_meta.trace_id}:assembled`,
  });
  return ack.seq;
}

async function eventsOf(task: AssembledTask, timeoutMs = 20_000): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(timeoutMs),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

/**
 * Takes the task's deliveries as an executor would, `count` times, and never settles any of them; with
 * `working`, the first taker writes an event as its attempt would have (so it counts as an attempt that did
 * work: deliveries that die before any event do not count toward MAX_DELIVER).
 */
async function takeWithoutSettling(count: number, working?: AssembledTask): Promise<NatsConnection> {
  const nc = await connect({ servers: nats.url });
  const consumer = await jetstream(nc).consumers.get(
    Consumers.EXECUTOR.stream,
    Consumers.EXECUTOR.durable_name,
  );
  for (let delivery = 1; delivery <= count; delivery++) {
    const msg = await consumer.next({ expires: 10_000 });
    expect(msg?.info.deliveryCount).toBe(delivery);
    if (working !== undefined && delivery === 1) {
      const writer = TaskEventWriter.first(js, {
        accountId: ACCOUNT,
        traceId: working.task_meta.trace_id,
        attempt: 1,
      });
      await writer.emit('message_chunk', { delta: 'Thinking about ' });
    }
  }
  return nc;
}

/** The task's dead letter, once stored (it follows the error event). */
async function deadLetterOf(task: AssembledTask) {
  const store = new DeadLetterStore(js, jsm);
  const stored = await waitFor(() => store.get(ACCOUNT, task.task_meta.trace_id), {
    description: `the dead letter of ${task.task_meta.trace_id}`,
  });
  return stored.letter;
}

async function rawLetter(task: AssembledTask): Promise<string | undefined> {
  const store = new DeadLetterStore(js, jsm);
  const stored = await store.get(ACCOUNT, task.task_meta.trace_id);
  if (stored === undefined) return undefined;
  return (await jsm.streams.getMessage(Streams.DEAD_LETTERS.name, { seq: stored.seq }))?.string();
}

describe('dead letters in the executor', () => {
  it('when a task exhausts its deliveries, it ends MAX_DELIVER_EXCEEDED and appears in the dead-letter stream with its reason and input, without its vault', async () => {
    const task = newTask('dies on its only delivery');
    await publishTask(task);
    const crashed = await takeWithoutSettling(1, task);
    await crashed.close();
    await startInstance();

    const events = await eventsOf(task);
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'MAX_DELIVER_EXCEEDED' } });
    const letter = await deadLetterOf(task);
    expect(letter).toMatchObject({
      trace_id: task.task_meta.trace_id,
      account_id: ACCOUNT,
      workflow_id: task.task_meta.workflow_id,
      user_id: task.task_meta.user_id,
      reason: { code: 'MAX_DELIVER_EXCEEDED', message: expect.stringContaining('attempted 2 times') },
      attempts: 2,
      source: 'executor',
      input: task.input,
    });
    const raw = await rawLetter(task);
    expect(raw).not.toContain(task.runtime_config.vault.ct);
    expect(raw).not.toContain(MODEL_KEY);
  });

  it('when the last delivery itself is never settled, the MAX_DELIVERIES advisory dead-letters the task, ends it with MAX_DELIVER_EXCEEDED and removes it from MESH_TASKS', async () => {
    const task = newTask('last delivery never settles');
    const seq = await publishTask(task);
    // Both deliveries the consumer allows go to a taker that never acks, naks or terms them.
    const taker = await takeWithoutSettling(2);
    // The executor's pulls make JetStream try a third delivery: it gives up and sends the advisory.
    await startInstance();

    const events = await eventsOf(task);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'error',
      data: { code: 'MAX_DELIVER_EXCEEDED', message: expect.stringContaining('never acknowledged') },
    });
    expect(await deadLetterOf(task)).toMatchObject({
      reason: { code: 'MAX_DELIVER_EXCEEDED' },
      attempts: 2,
      source: 'advisory',
      consumer: Consumers.EXECUTOR.durable_name,
      input: task.input,
    });
    // The message is deleted once the task has its letter and its error event.
    await waitFor(async () => (await jsm.streams.getMessage(Streams.TASKS.name, { seq })) === null, {
      description: 'the dead task to be gone from MESH_TASKS',
    });
    expect(model.requests.filter((r) => r.outcome !== 'models')).toHaveLength(0);
    await taker.close();
  });
});
