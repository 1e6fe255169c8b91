/** Seed 001 `input.variables` reach the model through the real executor: in the system prompt and the user message. */
import { followTaskEvents } from '@agentmesh/bus';
import {
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import { startNats, startScriptedModel, type NatsServer, type ScriptedModel } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('variables-test-1');

let nats: NatsServer;
let client: NatsConnection;
let model: ScriptedModel;
let executor: RunningService;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  model = await startScriptedModel({ respond: () => ({ content: 'ok' }) });
  executor = await startInProcessExecutor({ natsUrl: nats.url, vaultKeys, env: { LLM_MAX_RETRIES: '0' } });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

it('when a task carries variables, the model gets the system prompt and the user message with their values filled in', async () => {
  const js = jetstream(client);
  const task = assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key' },
    sealFor: vaultKeys,
    systemPrompt: 'Today is {{current_time}}.',
    userMessage: 'Read {{file_url}} and {{unknown}}.',
    variables: { current_time: '2026-11-23', file_url: 'https://files.example/a.pdf' },
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task));
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(20_000),
  })) {
    events.push(event);
    if (event.type === 'done' || event.type === 'error') break;
  }
  expect(events.at(-1)?.type).toBe('done');
  const [request] = model.requests;
  const sent = request?.body as { messages: unknown[] } | undefined;
  expect(sent?.messages.slice(0, 2)).toEqual([
    { role: 'system', content: 'Today is 2026-11-23.' },
    { role: 'user', content: 'Read https://files.example/a.pdf and {{unknown}}.' },
  ]);
});
