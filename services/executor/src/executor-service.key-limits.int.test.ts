/**
 * Per-key limits held by all executors together: two executors on one real NATS server run tasks that
 * share one model key limited to two requests in flight; the scripted model server counts the requests it
 * holds open, and never sees more than two, while tasks beyond the limit wait (a `model_waiting` event)
 * and all end done. A slot whose holder stops renewing it (its executor died) comes free once its lease
 * has expired.
 */
import { followTaskEvents, openMeshBuckets } from '@agentmesh/bus';
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
  startScriptedModel,
  waitFor,
  type NatsServer,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';
import { keyIdOf, SharedKeyLimits } from './model-choice/shared-key-limits.js';

const MODEL_KEY = 'canary-shared-model-key-3c9d';
const LIMIT = 2;
const TASKS = 6;
const vaultKeys = generateVaultKeyPair('exec-key-limits-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
const executors: { stop(): Promise<void> }[] = [];
const logLines: Record<string, string[]> = { a: [], b: [] };

/** Requests the server holds open (answered up to their first chunk), each released by the test. */
const held: (() => void)[] = [];
let inFlight = 0;
let maxInFlight = 0;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    respond: () => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const released = new Promise<void>((resolve) =>
        held.push(() => {
          inFlight -= 1;
          resolve();
        }),
      );
      return { content: 'Four, in good time.', hold: { afterChunks: 1, until: released } };
    },
  });
  for (const id of ['a', 'b']) {
    executors.push(
      await startInProcessExecutor({
        natsUrl: nats.url,
        vaultKeys,
        env: { EXECUTOR_ID: `executor-limits-${id}`, MAX_CONCURRENT_TASKS: String(TASKS / 2) },
        logLines: logLines[id]!,
      }),
    );
  }
});

afterAll(async () => {
  for (const release of held.splice(0)) release();
  await Promise.all(executors.map((executor) => executor.stop()));
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

function limitedTask(): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: 'acme',
    modelBaseUrl: model.baseUrl,
    model: { limits: { max_concurrent: LIMIT } },
    secrets: { [modelApiKeyVaultEntry(0)]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: 'What is 2+2?',
  });
}

/** `model_waiting` events of every task, as they come. */
const waiting: TaskEvent[] = [];

async function eventsOf(task: AssembledTask): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: task.task_meta.account_id,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(60_000),
  })) {
    events.push(event);
    if (event.type === 'model_waiting') waiting.push(event);
  }
  return events;
}

describe('per-key limits shared by executors', () => {
  it('when six tasks of two executors share a key limited to two in flight, the model never holds more than two requests, the others wait visibly, and all end done', async () => {
    const tasks = Array.from({ length: TASKS }, limitedTask);
    const finished = tasks.map((task) => eventsOf(task));
    for (const task of tasks) {
      await js.publish(taskAssembledSubject(task.task_meta.account_id), JSON.stringify(task));
    }
    // Each executor runs half the tasks at once: two hold the key's slots, the four others wait.
    await waitFor(() => (held.length >= LIMIT && waiting.length >= TASKS - LIMIT ? true : undefined), {
      timeoutMs: 30_000,
      description: `${LIMIT} requests held at the model and ${TASKS - LIMIT} tasks waiting`,
    });
    for (let answered = 0; answered < TASKS; answered++) {
      // The limit is reached (or every task left is in): release one request, the next may come in.
      const expected = Math.min(LIMIT, TASKS - answered);
      await waitFor(() => (held.length >= expected ? true : undefined), {
        timeoutMs: 30_000,
        description: `${expected} requests held at the model`,
      });
      held.shift()?.();
    }
    const all = await Promise.all(finished);

    expect(maxInFlight).toBe(LIMIT);
    // Both executors ran tasks (each takes at most half), so the limit held across them.
    for (const lines of Object.values(logLines)) {
      expect(lines.filter((line) => line.includes('task attempt finished')).length).toBeGreaterThan(0);
    }
    expect(all.map((events) => events.find(isTerminalEvent)?.type)).toEqual(Array(TASKS).fill('done'));
    const waits = all.flatMap((events) => events.filter((event) => event.type === 'model_waiting'));
    expect(waits).toHaveLength(TASKS - LIMIT);
    expect(waits[0]?.data).toEqual({ model: 'scripted-model', limit: 'max_concurrent', value: LIMIT });
  });

  it('when a slot holder stops renewing (its executor died), another takes the slot once the lease expires', async () => {
    const { modelLimits } = await openMeshBuckets(js, { only: ['modelLimits'] });
    const dyingConnection = await connect({ servers: nats.url });
    const dyingBucket = (await openMeshBuckets(jetstream(dyingConnection), { only: ['modelLimits'] }))
      .modelLimits;
    const keyId = keyIdOf('canary-dead-executor-key', 'http://127.0.0.1/v1');
    const dying = new SharedKeyLimits(dyingBucket, { leaseMs: 1_000, holder: 'dying' });
    await dying.acquire(keyId, { max_concurrent: 1 }, new AbortController().signal, () => undefined);
    // The executor dies: its renewals stop reaching NATS.
    await dyingConnection.close();

    const waits: string[] = [];
    const survivor = new SharedKeyLimits(modelLimits, { leaseMs: 1_000, holder: 'survivor' });
    const lease = await survivor.acquire(keyId, { max_concurrent: 1 }, AbortSignal.timeout(20_000), (wait) =>
      waits.push(wait.limit),
    );
    await lease.release(0);

    expect(waits).toEqual(['max_concurrent']);
    const slot = await modelLimits.get(`${keyId}.slot.0`);
    expect(slot?.operation).not.toBe('PUT');
  });
});

describe('requests per minute', () => {
  it('when a key has used its requests of the minute, the next call waits (told once) and goes ahead in the next minute', async () => {
    const { modelLimits } = await openMeshBuckets(js, { only: ['modelLimits'] });
    // A clock 1.5 s before a minute ends: the second call waits for the next minute, briefly.
    const offset = 60_000 - (Date.now() % 60_000) - 1_500;
    const limits = new SharedKeyLimits(modelLimits, {
      leaseMs: 1_000,
      holder: 'rpm-test',
      now: () => Date.now() + offset,
    });
    const keyId = keyIdOf('canary-rpm-key', 'http://127.0.0.1/v1');
    const waits: string[] = [];
    const acquire = () =>
      limits.acquire(keyId, { rpm: 1 }, AbortSignal.timeout(20_000), (wait) => waits.push(wait.limit));

    await (await acquire()).release(0);
    expect(waits).toEqual([]);
    await (await acquire()).release(0);

    expect(waits).toEqual(['rpm']);
  });
});
