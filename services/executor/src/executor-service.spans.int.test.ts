// The spans a running executor exports for one task, named and attributed after the OpenTelemetry GenAI
// conventions: the attempt is an `invoke_agent <workflow>` span, and the task's trace_id is the
// conversation every span of it names.
import { followTaskEvents, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { isTerminalEvent, newTraceId, taskAssembledSubject, type TaskEvent } from '@agentmesh/protocol';
import { startTelemetry, type Telemetry } from '@agentmesh/runtime';
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
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('spans-test-1');
const spans = new InMemorySpanExporter();

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let telemetry: Telemetry;
let executor: { stop(): Promise<void> };

beforeAll(async () => {
  telemetry = startTelemetry({
    service: 'executor-spans-test',
    env: {},
    spanProcessors: [new SimpleSpanProcessor({ exporter: spans })],
  });
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({ script: [{ content: 'hello', model: 'scripted-model-2026-05-01' }] });
  executor = await startInProcessExecutor({ natsUrl: nats.url, vaultKeys });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await model?.stop();
  await nats?.stop();
  await telemetry?.shutdown();
});

it("when a task runs, its attempt is an `invoke_agent <workflow>` span naming the agent and the task's trace as the conversation, and its chat span names the same conversation", async () => {
  const traceId = newTraceId();
  const task = assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: {},
    sealFor: vaultKeys,
    userMessage: 'say hello',
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId,
    signal: AbortSignal.timeout(20_000),
  })) {
    events.push(event);
  }
  expect(events.filter(isTerminalEvent).map((event) => event.type)).toEqual(['done']);

  // The attempt's span ends once the task is acknowledged, a little after its terminal event.
  const agentSpan = await waitFor(
    () =>
      spans
        .getFinishedSpans()
        .find((span) => span.spanContext().traceId === traceId && span.name.startsWith('invoke_agent')),
    { description: "the task's invoke_agent span" },
  );
  expect(agentSpan.name).toBe('invoke_agent test_agent');
  expect(agentSpan.kind).toBe(SpanKind.CONSUMER);
  expect(agentSpan.attributes).toEqual({
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'test_agent',
    'gen_ai.agent.id': 'test_agent',
    'gen_ai.conversation.id': traceId,
    'agentmesh.account_id': ACCOUNT,
    'agentmesh.task.attempt': 1,
  });

  const chats = spans
    .getFinishedSpans()
    .filter((span) => span.spanContext().traceId === traceId && span.name === 'chat scripted-model');
  expect(chats).toHaveLength(1);
  expect(chats[0]?.parentSpanContext?.spanId).toBe(agentSpan.spanContext().spanId);
  expect(chats[0]?.attributes).toMatchObject({
    'gen_ai.conversation.id': traceId,
    'gen_ai.request.model': 'scripted-model',
    'gen_ai.response.model': 'scripted-model-2026-05-01',
    'gen_ai.response.id': expect.stringMatching(/^chatcmpl-scripted-\d+$/),
  });
  expect(spans.getFinishedSpans().some((span) => span.name === 'execute_task')).toBe(false);
});

it('when a task runs an agent version, its invoke_agent span, its status record and only its first event name that version', async () => {
  const traceId = newTraceId();
  const digest = `sha256:${'c'.repeat(64)}`;
  model.enqueue({ content: 'hello again' });
  const task = assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: {},
    sealFor: vaultKeys,
    userMessage: 'say hello',
    agentVersion: { version: 3, digest },
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId,
    signal: AbortSignal.timeout(20_000),
  })) {
    events.push(event);
  }
  expect(events.at(-1)?.type).toBe('done');
  expect(events[0]?.agent).toEqual({ workflow_id: 'test_agent', version: 3, digest });
  expect(events.slice(1).map((event) => event.agent)).toEqual(events.slice(1).map(() => undefined));

  const agentSpan = await waitFor(
    () =>
      spans
        .getFinishedSpans()
        .find((span) => span.spanContext().traceId === traceId && span.name.startsWith('invoke_agent')),
    { description: "the task's invoke_agent span" },
  );
  expect(agentSpan.attributes).toMatchObject({
    'agentmesh.agent.version': 3,
    'agentmesh.agent.digest': digest,
  });
  const status = await new TaskStatusStore((await openMeshBuckets(js)).tasks).get(ACCOUNT, traceId);
  expect(status).toMatchObject({ status: 'done', agent_version: 3, agent_digest: digest });
});
