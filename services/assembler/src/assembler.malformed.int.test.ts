/**
 * Malformed received-task messages on real NATS: the task a message names ends with an INVALID_REQUEST
 * `error` event and status where its trace id can be read, and every such message is counted by reason.
 */
import { randomBytes } from 'node:crypto';
import {
  ensureMeshStreams,
  followTaskEvents,
  MalformedTaskReason,
  openMeshBuckets,
  TaskStatusStore,
} from '@agentmesh/bus';
import { isTerminalEvent, newTraceId, taskReceivedSubject, type TaskEvent } from '@agentmesh/protocol';
import {
  createLogger,
  loadConfig,
  startTelemetry,
  type RunningService,
  type Telemetry,
} from '@agentmesh/runtime';
import { CollectingMetricReader, startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AssemblerMetric } from './assembler-metrics.js';
import { startAssembler } from './assembler-service.js';
import { assemblerConfigSchema } from './config.js';

const ACCOUNT = 'acct_malformed';
const reader = new CollectingMetricReader();

let nats: NatsServer;
let telemetry: Telemetry;
let client: NatsConnection;
let assemblerConnection: NatsConnection;
let js: JetStreamClient;
let statuses: TaskStatusStore;
let assembler: RunningService;

beforeAll(async () => {
  telemetry = startTelemetry({ service: 'assembler', env: {}, metricReaders: [reader] });
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  await ensureMeshStreams(await jetstreamManager(client));
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
  const executorKey = generateVaultKeyPair('exec-malformed');
  const config = loadConfig(assemblerConfigSchema, {
    NATS_URL: nats.url,
    VAULT_KEY_ID: executorKey.kid,
    VAULT_PUBLIC_KEY: executorKey.publicKey,
    CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
    CREDENTIALS_MASTER_KEY_ID: 'master-malformed',
  });
  assemblerConnection = await connect({ servers: nats.url });
  assembler = await startAssembler({
    config,
    log: createLogger({ service: 'assembler', level: 'silent' }),
    nc: assemblerConnection,
  });
});

afterAll(async () => {
  await assembler?.stop();
  await assemblerConnection?.drain();
  await client?.drain();
  await telemetry?.shutdown();
  await nats?.stop();
});

async function malformedCount(reason: MalformedTaskReason): Promise<number> {
  const point = (await reader.points(AssemblerMetric.MALFORMED_TASKS)).find(
    (p) => p.attributes.reason === reason,
  );
  return typeof point?.value === 'number' ? point.value : 0;
}

async function queued(traceId: string, accountId = ACCOUNT): Promise<void> {
  await statuses.create({
    trace_id: traceId,
    account_id: accountId,
    workflow_id: 'company_research',
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

describe('a malformed received-task message', () => {
  it('whose trace id can be read ends its task: an INVALID_REQUEST error event naming the bad paths, an error status, and a count by reason', async () => {
    const traceId = newTraceId();
    await queued(traceId);
    const marker = 'payload-marker-91c2';
    await js.publish(
      taskReceivedSubject(ACCOUNT),
      JSON.stringify({ task_meta: { trace_id: traceId, account_id: ACCOUNT }, note: marker }),
    );

    const terminal = await terminalEvent(traceId);
    expect(terminal).toMatchObject({ type: 'error', data: { code: 'INVALID_REQUEST', retryable: false } });
    expect(JSON.stringify(terminal)).toContain('task_meta.workflow_id');
    expect(JSON.stringify(terminal)).not.toContain(marker);
    await waitFor(async () => (await statuses.get(ACCOUNT, traceId))?.status === 'error', {
      timeoutMs: 5_000,
      description: 'the status to say error',
    });
    expect(await statuses.get(ACCOUNT, traceId)).toMatchObject({
      status: 'error',
      workflow_id: 'company_research',
      last_seq: terminal.seq,
      error: { code: 'INVALID_REQUEST' },
    });
    await waitFor(async () => (await malformedCount(MalformedTaskReason.SCHEMA)) === 1, {
      timeoutMs: 5_000,
      description: 'the malformed message to be counted',
    });
  });

  it('that is not JSON is counted by its own reason', async () => {
    await js.publish(taskReceivedSubject(ACCOUNT), 'not json at all');
    await waitFor(async () => (await malformedCount(MalformedTaskReason.NOT_JSON)) === 1, {
      timeoutMs: 10_000,
      description: 'the message to be counted',
    });
  });
});
