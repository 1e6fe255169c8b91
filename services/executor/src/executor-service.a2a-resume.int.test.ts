// An A2A tool call taken over by the next attempt: the first attempt's executor died while the remote A2A
// task ran (its events, written here as it would have, hold the call's tool_start and the remote task's id in
// tool_progress); the redelivered attempt follows that remote task (SubscribeToTask) instead of sending the
// message again, and the task ends done with the remote task's answer.
import { ensureMeshStreams, followTaskEvents, TaskEventWriter } from '@agentmesh/bus';
import {
  Consumers,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  ToolDefinition,
  type A2aTool,
  type TaskEvent,
} from '@agentmesh/protocol';
import { startNats, startScriptedModel, type NatsServer, type ScriptedModel } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2aTestAgent, type A2aTestAgent } from './__fixtures__/a2a-agent.js';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { toolResultsSoFar } from './__fixtures__/model-requests.js';
import { assembledTask } from './__fixtures__/tasks.js';
import { SecretScrubber } from './secrets/index.js';
import { AbortCause, TaskAbortReason } from './task-abort.js';
import { ensureExecutorConsumer } from './task-consumer.js';
import { OutboundGuard } from './tools/http/outbound-guard.js';
import { A2aToolRunner } from './tools/a2a/index.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('exec-a2a-resume');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let agent: A2aTestAgent;
let executor: { stop(): Promise<void> } | undefined;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  const jsm = await jetstreamManager(client);
  await ensureMeshStreams(jsm);
  await ensureExecutorConsumer(jsm, { maxDeliver: 3, ackWaitMs: 1_500, maxAckPending: 1000 });
  agent = await startA2aTestAgent({
    script: async (turn) => {
      turn.working('first leg');
      // The rest only once someone follows the task again: the next attempt.
      await turn.resubscribed;
      turn.working('second leg');
      turn.artifact('itinerary', [{ text: `booked: ${turn.text}` }]);
      turn.end('completed');
    },
  });
  model = await startScriptedModel({
    respond: (request) =>
      toolResultsSoFar(request) === 0
        ? { toolCalls: [{ id: 'call_trip', name: 'ask_travel', arguments: { message: 'two legs' } }] }
        : { content: `answer: ${String(request.body.messages.at(-1)?.content ?? '')}` },
  });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await Promise.all([model?.stop(), agent?.stop()]);
  await nats?.stop();
});

/** The remote task the first attempt started, left running when its executor stopped. */
async function remoteTaskLeftRunning(tool: A2aTool): Promise<string> {
  const guard = new OutboundGuard({ allowHosts: ['127.0.0.1'] });
  const runner = new A2aToolRunner({
    guard,
    dispatcher: guard.createAgent(),
    defaultTimeoutMs: 10_000,
    maxResultBytes: 64 * 1024,
    cards: { maxBytes: 64 * 1024, ttlMs: 60_000, timeoutMs: 5_000 },
  });
  const stopping = new AbortController();
  let remoteTaskId: string | undefined;
  await runner.run(
    tool,
    { message: 'two legs' },
    {
      vault: {},
      account: ACCOUNT,
      scrubber: new SecretScrubber([]),
      callId: 'call_trip',
      signal: stopping.signal,
      onProgress: (progress) => {
        remoteTaskId ??= progress.remote_task_id;
        if (progress.message === 'first leg') {
          stopping.abort(new TaskAbortReason(AbortCause.EXECUTOR_STOPPING, 'the executor is stopping'));
        }
      },
    },
  );
  if (remoteTaskId === undefined) throw new Error('the remote task was not announced');
  return remoteTaskId;
}

describe('an A2A tool call taken over by the next attempt', () => {
  it('follows the remote task the first attempt started: the message is sent once, and the task ends done', async () => {
    const parsed = ToolDefinition.parse({ type: 'A2A', name: 'ask_travel', card_url: agent.cardUrl });
    if (parsed.type !== 'A2A') throw new Error('not an A2A tool');
    const task = assembledTask({
      traceId: newTraceId(),
      accountId: ACCOUNT,
      modelBaseUrl: model.baseUrl,
      secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key' },
      sealFor: vaultKeys,
      userMessage: 'book two legs',
      tools: [parsed],
    });

    // The first attempt: takes the task, starts the call's remote task, writes its events, and dies.
    await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
      msgID: `${task.task_meta.trace_id}:assembled`,
    });
    const nc = await connect({ servers: nats.url });
    const msg = await jetstream(nc)
      .consumers.get(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name)
      .then((consumer) => consumer.next({ expires: 5_000 }));
    expect(msg?.info.deliveryCount).toBe(1);
    const remoteTaskId = await remoteTaskLeftRunning(parsed);
    const writer = TaskEventWriter.first(js, {
      accountId: ACCOUNT,
      traceId: task.task_meta.trace_id,
      attempt: 1,
    });
    await writer.emit('tool_start', {
      call_id: 'call_trip',
      tool: 'ask_travel',
      arguments: { message: 'two legs' },
    });
    await writer.emit('tool_progress', {
      call_id: 'call_trip',
      tool: 'ask_travel',
      progress: 1,
      message: 'first leg',
      remote_task_id: remoteTaskId,
    });
    await nc.close();

    executor = await startInProcessExecutor({
      natsUrl: nats.url,
      vaultKeys,
      env: { ACK_WAIT_MS: '1500', ACK_PROGRESS_MS: '300', MAX_DELIVER: '3' },
    });
    const events: TaskEvent[] = [];
    for await (const event of followTaskEvents(js, {
      accountId: ACCOUNT,
      traceId: task.task_meta.trace_id,
      signal: AbortSignal.timeout(30_000),
    })) {
      events.push(event);
      if (isTerminalEvent(event)) break;
    }

    expect(agent.calls.map((call) => call.method)).toEqual(['SendStreamingMessage', 'SubscribeToTask']);
    expect(agent.cancels).toEqual([]);
    expect(events.find((event) => event.type === 'attempt_started')?.data).toMatchObject({
      rerun_call_ids: ['call_trip'],
    });
    expect(
      events
        .filter((event) => event.attempt === 2 && event.type === 'tool_progress')
        .map((event) => event.data),
    ).toEqual([expect.objectContaining({ message: 'second leg', remote_task_id: remoteTaskId })]);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'answer: booked: two legs' },
    });
  });
});
