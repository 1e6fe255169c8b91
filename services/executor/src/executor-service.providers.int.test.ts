/**
 * Provider profiles and provider quirks through a running executor on a real NATS server, the model a
 * loopback server replaying provider-shaped answers: a Mistral reasoning stream ends `done` with its
 * text as the answer and its thinking as `tool_thinking`; an answer cut at the token limit by a provider
 * that sends no usage ends `done` marked truncated, with estimated usage that the account's day counts;
 * a provider this executor does not know ends the task before anything is sent.
 */
import { AccountUsageStore, followTaskEvents, openMeshBuckets } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  utcDay,
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
import {
  MISTRAL_ANSWER,
  MISTRAL_THINKING,
  mistralReasoningStream,
  streamWithoutUsage,
} from './__fixtures__/provider-streams.js';
import { assembledTask } from './__fixtures__/tasks.js';

const MODEL_KEY = 'canary-model-key-5e0c1d';
const vaultKeys = generateVaultKeyPair('exec-providers-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let executor: { stop(): Promise<void> };

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({ apiKey: MODEL_KEY });
  executor = await startInProcessExecutor({ natsUrl: nats.url, vaultKeys });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

function newTask(account: string, provider: string): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: account,
    provider,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: 'What is 2+2?',
  });
}

async function run(task: AssembledTask): Promise<TaskEvent[]> {
  const account = task.task_meta.account_id;
  await js.publish(taskAssembledSubject(account), JSON.stringify(task));
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: account,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(20_000),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

const deltasOf = (events: TaskEvent[], type: 'message_chunk' | 'tool_thinking') =>
  events.flatMap((e) => (e.type === type ? [e.data.delta] : [])).join('');

describe('provider profiles in the executor', () => {
  it('when a mistral agent’s model streams reasoning as content parts, the task is done with the text as its answer and the thinking as tool_thinking, and no stream_options was sent', async () => {
    const before = model.requests.length;
    model.enqueue(mistralReasoningStream());
    const events = await run(newTask('acme', 'mistral'));

    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: MISTRAL_ANSWER, finish_reason: 'stop' },
    });
    expect(deltasOf(events, 'tool_thinking')).toBe(MISTRAL_THINKING);
    expect(deltasOf(events, 'message_chunk')).toBe(MISTRAL_ANSWER);
    const request = model.requests[before];
    expect(request?.body).not.toHaveProperty('stream_options');
  });

  it("when an answer without usage is cut at the token limit, done says truncated and usage_reported false, and the account's day counts the estimate", async () => {
    const account = 'no-usage';
    model.enqueue(streamWithoutUsage('Four is the answer, bec', 'length'));
    const events = await run(newTask(account, 'generic'));

    const step = events.find((e) => e.type === 'step_finished');
    expect(step?.data).toMatchObject({ finish_reason: 'length', usage_reported: false });
    const done = events.at(-1)!;
    expect(done).toMatchObject({
      type: 'done',
      data: { finish_reason: 'length', truncated: true, usage_reported: false },
    });
    const estimated = done.type === 'done' ? done.data.usage.total_tokens : 0;
    expect(estimated).toBeGreaterThan(0);
    const store = new AccountUsageStore((await openMeshBuckets(js, { only: ['accountUsage'] })).accountUsage);
    const day = await waitFor(
      async () => {
        const usage = await store.get(account, utcDay(new Date()));
        return usage.tasks >= 1 ? usage : undefined;
      },
      { timeoutMs: 10_000, description: 'the task added to its account day' },
    );
    expect(day.total_tokens).toBe(estimated);
  });

  it('when the model names a provider this executor does not know, the task ends INVALID_REQUEST and the model is not called', async () => {
    const before = model.requests.length;
    const events = await run(newTask('acme', 'anthropic'));
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'INVALID_REQUEST' } });
    expect(model.requests.length).toBe(before);
  });
});
