import { followTaskEvents, MalformedTaskReason, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { isTerminalEvent, newTraceId, taskAssembledSubject, type TaskEvent } from '@agentmesh/protocol';
import { startTelemetry, type RunningService, type Telemetry } from '@agentmesh/runtime';
import { CollectingMetricReader, startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { ExecutorMetric } from './executor-metrics.js';

const ACCOUNT = 'acme';
const reader = new CollectingMetricReader();

let telemetry: Telemetry;
let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let statuses: TaskStatusStore;
let executor: RunningService;

beforeAll(async () => {
  telemetry = startTelemetry({ service: 'executor-test', env: {}, metricReaders: [reader] });
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys: generateVaultKeyPair('malformed-1'),
  });
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await nats?.stop();
  await telemetry?.shutdown();
});

async function queued(traceId: string, accountId = ACCOUNT): Promise<void> {
  await statuses.create({
    trace_id: traceId,
    account_id: accountId,
    workflow_id: 'w',
    status: 'queued',
    attempt: 0,
    updated_at: new Date().toISOString(),
  });
}

async function terminalEvent(traceId: string): Promise<TaskEvent> {
  const signal = AbortSignal.timeout(15_000);
  for await (const event of followTaskEvents(js, { accountId: ACCOUNT, traceId, signal })) {
    if (isTerminalEvent(event)) return event;
  }
  throw new Error(`no terminal event for ${traceId}`);
}

async function malformedCount(reason: MalformedTaskReason): Promise<number> {
  const points = await reader.points(ExecutorMetric.MALFORMED_TASKS);
  const point = points.find((p) => p.attributes.reason === reason);
  return typeof point?.value === 'number' ? point.value : 0;
}

describe('a malformed assembled-task message', () => {
  it('whose trace id can be read ends its task: an INVALID_REQUEST error event, an error status, and a count by reason', async () => {
    const traceId = newTraceId();
    await queued(traceId);
    const secret = 'sk-never-echoed-1234';
    await js.publish(
      taskAssembledSubject(ACCOUNT),
      JSON.stringify({
        task_meta: { trace_id: traceId, account_id: ACCOUNT, workflow_id: 'w' },
        oops: secret,
      }),
    );

    const terminal = await terminalEvent(traceId);
    expect(terminal).toMatchObject({ type: 'error', data: { code: 'INVALID_REQUEST', retryable: false } });
    expect(JSON.stringify(terminal)).not.toContain(secret);
    await waitFor(async () => (await statuses.get(ACCOUNT, traceId))?.status === 'error', {
      timeoutMs: 5_000,
      description: 'the status to say error',
    });
    expect(await statuses.get(ACCOUNT, traceId)).toMatchObject({
      status: 'error',
      last_seq: terminal.seq,
      error: { code: 'INVALID_REQUEST' },
    });
    await waitFor(async () => (await malformedCount(MalformedTaskReason.SCHEMA)) === 1, {
      timeoutMs: 5_000,
      description: 'the malformed message to be counted',
    });
  });

  it('that is not JSON is counted, and nothing is written', async () => {
    const before = await malformedCount(MalformedTaskReason.NOT_JSON);
    await js.publish(taskAssembledSubject(ACCOUNT), '{"task_meta": {"trace_id": ');
    await waitFor(async () => (await malformedCount(MalformedTaskReason.NOT_JSON)) === before + 1, {
      timeoutMs: 10_000,
      description: 'the message to be counted',
    });
  });

  it("naming another account than its subject is counted, and neither account's task is touched", async () => {
    const traceId = newTraceId();
    await queued(traceId, 'globex');
    await queued(traceId, ACCOUNT);
    const before = await malformedCount(MalformedTaskReason.SCHEMA);
    await js.publish(
      taskAssembledSubject(ACCOUNT),
      JSON.stringify({ task_meta: { trace_id: traceId, account_id: 'globex', workflow_id: 'w' } }),
    );
    await waitFor(async () => (await malformedCount(MalformedTaskReason.SCHEMA)) === before + 1, {
      timeoutMs: 10_000,
      description: 'the message to be counted',
    });
    expect((await statuses.get('globex', traceId))?.status).toBe('queued');
    expect((await statuses.get(ACCOUNT, traceId))?.status).toBe('queued');
  });
});
