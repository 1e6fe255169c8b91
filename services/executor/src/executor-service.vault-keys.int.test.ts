/**
 * Vault key rotation on real NATS: a task sealed for a key this executor does not hold is handed back for
 * an executor that holds it, and ends with a clear error once its deliveries are spent.
 */
import { followTaskEvents, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
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
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const oldKey = generateVaultKeyPair('vault-old');
const newKey = generateVaultKeyPair('vault-new');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let statuses: TaskStatusStore;
const executors: RunningService[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({ respond: () => ({ content: 'answer' }) });
});

afterEach(async () => {
  for (const executor of executors.splice(0)) await executor.stop();
});

afterAll(async () => {
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

async function publishTaskSealedFor(keys: typeof newKey, traceId = newTraceId()): Promise<string> {
  const task = assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'm' },
    sealFor: keys,
    userMessage: `task ${traceId}`,
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  return traceId;
}

async function eventsOf(traceId: string): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  const signal = AbortSignal.timeout(20_000);
  for await (const event of followTaskEvents(js, { accountId: ACCOUNT, traceId, signal })) {
    events.push(event);
    if (isTerminalEvent(event)) return events;
  }
  throw new Error(`no terminal event for ${traceId}`);
}

describe('an executor that lacks the vault key a task was sealed for', () => {
  it('hands the task back, and an executor holding the key runs it to done', async () => {
    const logLines: string[] = [];
    executors.push(
      await startInProcessExecutor({
        natsUrl: nats.url,
        vaultKeys: oldKey,
        logLines,
        env: { MAX_DELIVER: '30', VAULT_KEY_HAND_BACK_MS: '200' },
      }),
    );
    const traceId = await publishTaskSealedFor(newKey);
    await waitFor(() => logLines.some((line) => line.includes('"kid":"vault-new"')), {
      timeoutMs: 10_000,
      description: 'the executor without the key to hand the task back',
    });
    executors.push(
      await startInProcessExecutor({
        natsUrl: nats.url,
        vaultKeys: newKey,
        env: { MAX_DELIVER: '30', VAULT_KEY_HAND_BACK_MS: '200' },
      }),
    );

    const events = await eventsOf(traceId);
    expect(events.filter(isTerminalEvent)).toEqual([expect.objectContaining({ type: 'done' })]);
  });

  it('when no executor holds the key, the task ends after MAX_DELIVER deliveries with one error naming the key', async () => {
    statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
    executors.push(
      await startInProcessExecutor({
        natsUrl: nats.url,
        vaultKeys: oldKey,
        env: { MAX_DELIVER: '3', VAULT_KEY_HAND_BACK_MS: '100' },
      }),
    );
    const traceId = await publishTaskSealedFor(newKey);

    const events = await eventsOf(traceId);
    expect(events.filter(isTerminalEvent)).toHaveLength(1);
    const terminal = events.at(-1)!;
    expect(terminal).toMatchObject({ type: 'error', attempt: 3, data: { retryable: false } });
    expect(terminal.type === 'error' && terminal.data.message).toContain('"vault-new"');
    await waitFor(async () => (await statuses.get(ACCOUNT, traceId))?.status === 'error', {
      timeoutMs: 5_000,
      description: 'the status to say error',
    });
  });

  it('when such a task was cancelled, it ends CANCELLED at once instead of being handed around', async () => {
    statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
    const traceId = newTraceId();
    await statuses.create({
      trace_id: traceId,
      account_id: ACCOUNT,
      workflow_id: 'test_agent',
      submitted_at: new Date().toISOString(),
      status: 'queued',
      attempt: 0,
      updated_at: new Date().toISOString(),
      cancel_requested_at: new Date().toISOString(),
    });
    executors.push(
      await startInProcessExecutor({
        natsUrl: nats.url,
        vaultKeys: oldKey,
        env: { MAX_DELIVER: '30', VAULT_KEY_HAND_BACK_MS: '60000' },
      }),
    );
    await publishTaskSealedFor(newKey, traceId);

    const events = await eventsOf(traceId);
    expect(events.filter(isTerminalEvent)).toEqual([
      expect.objectContaining({
        type: 'error',
        attempt: 1,
        data: expect.objectContaining({ code: 'CANCELLED' }),
      }),
    ]);
  });
});
