import { followTaskEvents } from '@agentmesh/bus';
import {
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  taskEventsSubject,
  type AssembledTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startNats,
  startScriptedModel,
  type ModelStep,
  type NatsServer,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('deltas-test-1');
/** Per user message: how the model answers. */
const steps = new Map<string, ModelStep>();

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let executor: RunningService;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({
    respond: (request) => {
      const user = request.body.messages.find((m) => m.role === 'user')?.content;
      return steps.get(String(user)) ?? { content: 'no script for this task' };
    },
  });
  // A window far longer than any test, and a size threshold at the size limit: text inside it leaves only
  // when the size limit or another event says so, so what a test sees early can only be the delta that
  // leaves at once.
  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    env: { EVENT_DELTA_WINDOW_MS: '600000', EVENT_DELTA_MIN_CHARS: '4096', LLM_MAX_RETRIES: '0' },
  });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

function taskSaying(user: string, step: ModelStep): AssembledTask {
  steps.set(user, step);
  return assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key' },
    sealFor: vaultKeys,
    userMessage: user,
  });
}

async function run(task: AssembledTask): Promise<TaskEvent[]> {
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task));
  const events: TaskEvent[] = [];
  const signal = AbortSignal.timeout(20_000);
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal,
  }))
    events.push(event);
  return events;
}

const chunkTexts = (events: TaskEvent[]) =>
  events.flatMap((event) => (event.type === 'message_chunk' ? [event.data.delta] : []));

describe('streamed deltas on the bus', () => {
  it('when the model streams 2,000 deltas, the answer arrives whole in a handful of message_chunk events', async () => {
    const answer = 'tok '.repeat(2_000);
    const events = await run(taskSaying('long answer', { content: answer, chunkSize: 4 }));
    const texts = chunkTexts(events);
    expect(texts.join('')).toBe(answer);
    // 8,000 characters at 4,096 per event at most, plus the one that left at once.
    expect(texts.length).toBeLessThanOrEqual(4);
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: answer } });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it('when the model sends its first delta and then stalls, that delta is on the bus before the model goes on', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const task = taskSaying('first delta', {
      content: 'Hello there, friend.',
      chunkSize: 5,
      // Chunk 0 carries only the role; chunk 1 the first text.
      hold: { afterChunks: 2, until: released },
    });
    const subject = taskEventsSubject(ACCOUNT, task.task_meta.trace_id);
    const firstChunk = new Promise<TaskEvent>((resolve) => {
      const sub = client.subscribe(subject, {
        callback: (_error, msg) => {
          const event = msg.json<TaskEvent>();
          if (event.type !== 'message_chunk') return;
          sub.unsubscribe();
          resolve(event);
        },
      });
    });
    const events = run(task);
    expect((await firstChunk).data).toEqual({ delta: 'Hello' });
    release();
    expect(chunkTexts(await events).join('')).toBe('Hello there, friend.');
  });
});
