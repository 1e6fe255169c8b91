// An executor running a task whose agent calls another agent, on a real NATS server: the sub-task goes to
// the gateway's trusted submit subject (here a stand-in that plays the gateway and the sub-task's run:
// status record, events, final status), with the attempt's deadline; the parent's events frame the call
// with subtask_started/subtask_finished and the sub-task's answer reaches the model. The fan-out limit of
// the executor's config refuses a call the model then answers around.
import {
  ensureMeshStreams,
  followTaskEvents,
  openMeshBuckets,
  TaskEventWriter,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  Subjects,
  taskAssembledSubject,
  taskEventsSubject,
  TASK_PARENT_HEADER,
  type AgentTool,
  type AssembledTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import { startNats, startScriptedModel, type NatsServer, type ScriptedModel } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';
import { ensureExecutorConsumer } from './task-consumer.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'model-key-sub-agents';
const vaultKeys = generateVaultKeyPair('exec-sub-agents-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let statuses: TaskStatusStore;
const submitted: { body: { trace_id: string; deadline?: string }; parent: unknown }[] = [];
const instances: { stop(): Promise<void> }[] = [];

const researcher: AgentTool = {
  type: 'AGENT',
  name: 'agent_researcher',
  description: 'Researches',
  parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
  workflow_id: 'researcher',
};

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  const jsm = await jetstreamManager(client);
  await ensureMeshStreams(jsm);
  await ensureExecutorConsumer(jsm, { maxDeliver: 3, ackWaitMs: 3_000, maxAckPending: 1000 });
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    respond: (request) => {
      const answered = request.body.messages.find((message) => message.role === 'tool');
      return answered === undefined
        ? { toolCalls: [{ name: 'agent_researcher', arguments: { input: 'dig' } }] }
        : { content: `relayed: ${String(answered.content)}` };
    },
  });
  // The gateway and the sub-task's executor in one: accept, then finish the sub-task with an answer.
  client.subscribe(Subjects.GATEWAY_SUBMIT, {
    callback: (_error, msg) => {
      void (async () => {
        const body = msg.json<{ trace_id: string; workflow_id: string; deadline?: string }>();
        const parent = JSON.parse(msg.headers!.get(TASK_PARENT_HEADER)) as { trace_id: string };
        submitted.push({ body, parent });
        const now = new Date().toISOString();
        const record = {
          trace_id: body.trace_id,
          account_id: ACCOUNT,
          workflow_id: body.workflow_id,
          status: 'queued' as const,
          attempt: 0,
          submitted_at: now,
          updated_at: now,
          parent_trace_id: parent.trace_id,
        };
        await statuses.create(record);
        msg.respond(
          JSON.stringify({
            trace_id: body.trace_id,
            events_subject: taskEventsSubject(ACCOUNT, body.trace_id),
            events_url: `/v1/tasks/${body.trace_id}/events`,
          }),
        );
        const writer = TaskEventWriter.first(js, { accountId: ACCOUNT, traceId: body.trace_id, attempt: 1 });
        const done = await writer.emit('done', {
          message: 'the sub-agent found 42',
          steps: 1,
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          duration_ms: 1,
        });
        await statuses.update(
          ACCOUNT,
          body.trace_id,
          (current) =>
            current && { ...current, status: 'done', attempt: 1, last_seq: done.seq, updated_at: now },
        );
      })();
    },
  });
  await client.flush();
});

afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.stop()));
});

afterAll(async () => {
  await client?.drain();
  await model?.stop();
  await nats?.stop();
});

async function run(task: AssembledTask, env: Record<string, string> = {}): Promise<TaskEvent[]> {
  instances.push(await startInProcessExecutor({ natsUrl: nats.url, vaultKeys, env }));
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task));
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(20_000),
  }))
    events.push(event);
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

function parentTask(): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: 'ask the researcher',
    tools: [researcher],
    deadlineMs: 60_000,
  });
}

describe('an agent tool in a running task', () => {
  it("submits the sub-task with the attempt's deadline, frames the call with subtask events, and the model gets the sub-task's answer", async () => {
    const task = parentTask();
    const before = Date.now();
    const events = await run(task);
    const after = Date.now();

    const framing = events
      .map((event) => event.type)
      .filter((type) => type !== 'step_finished' && type !== 'tool_call_delta');
    expect(framing).toEqual([
      'tool_start',
      'subtask_started',
      'subtask_finished',
      'tool_result',
      'message_chunk',
      ...framing.slice(5, -1).map(() => 'message_chunk'),
      'done',
    ]);
    // A step_finished after each of the two model calls.
    expect(events.filter((event) => event.type === 'step_finished')).toHaveLength(2);
    const mine = submitted.find(
      (submission) =>
        submission.parent && (submission.parent as { trace_id: string }).trace_id === task.task_meta.trace_id,
    )!;
    const deadline = Date.parse(mine.body.deadline!);
    expect(deadline).toBeGreaterThanOrEqual(before + 60_000 - 1_000);
    expect(deadline).toBeLessThanOrEqual(after + 60_000);
    expect(events.at(-1)).toMatchObject({ type: 'done' });
    expect((events.at(-1) as Extract<TaskEvent, { type: 'done' }>).data.message).toContain(
      'the sub-agent found 42',
    );
  });

  it('with MAX_SUBTASKS_PER_TASK 0, the call is a SUBTASK_LIMIT_EXCEEDED tool error, nothing is submitted, and the task still ends done', async () => {
    const task = parentTask();
    const events = await run(task, { MAX_SUBTASKS_PER_TASK: '0' });

    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      data: { ok: false, error: { code: 'SUBTASK_LIMIT_EXCEEDED' } },
    });
    expect(events.some((event) => event.type === 'subtask_started')).toBe(false);
    expect(
      submitted.filter(
        (submission) => (submission.parent as { trace_id: string }).trace_id === task.task_meta.trace_id,
      ),
    ).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'done' });
  });
});
