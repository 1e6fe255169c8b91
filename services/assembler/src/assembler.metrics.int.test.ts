/**
 * The assembler's metrics on real NATS: tasks counted and timed by outcome (`published`, or the error
 * code that ended them), and definition and credential lookups by whether memory or the bucket answered.
 */
import { randomBytes } from 'node:crypto';
import {
  AgentStore,
  CredentialStore,
  ensureMeshStreams,
  followTaskEvents,
  openMeshBuckets,
  SHARED_CATALOGUE,
} from '@agentmesh/bus';
import {
  AssembledTask,
  isTerminalEvent,
  taskAssembledSubject,
  taskReceivedSubject,
} from '@agentmesh/protocol';
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
import { ACCOUNT, CANARY, qichachaAgent, receivedTask, USER } from './__fixtures__/assembly.js';
import { AssemblerMetric } from './assembler-metrics.js';
import { startAssembler } from './assembler-service.js';
import { assemblerConfigSchema } from './config.js';

const reader = new CollectingMetricReader();
const masterKey = { kid: 'master-metrics', key: randomBytes(32).toString('base64') };
// An agent with no tools: its only credential is the model's key.
const AGENT = qichachaAgent({ workflow_id: 'metered_agent', tools: [] });

let nats: NatsServer;
let telemetry: Telemetry;
let client: NatsConnection;
let assemblerConnection: NatsConnection;
let js: JetStreamClient;
let assembler: RunningService;

beforeAll(async () => {
  // Registered before the assembler starts, as runService does: the assembler takes its meter from it.
  telemetry = startTelemetry({ service: 'assembler-test', env: {}, metricReaders: [reader] });
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  await ensureMeshStreams(await jetstreamManager(client));
  const buckets = await openMeshBuckets(js);
  // Stored before the assembler starts: its mirrors hold them when the first task arrives.
  await new AgentStore(buckets.agents).put(SHARED_CATALOGUE, AGENT);
  await new CredentialStore(buckets.credentials, { current: masterKey }).put(
    ACCOUNT,
    USER,
    'MODEL_KEY',
    CANARY.MODEL_KEY,
  );
  const executorKey = generateVaultKeyPair('exec-metrics');
  const config = loadConfig(assemblerConfigSchema, {
    NATS_URL: nats.url,
    VAULT_KEY_ID: executorKey.kid,
    VAULT_PUBLIC_KEY: executorKey.publicKey,
    CREDENTIALS_MASTER_KEY: masterKey.key,
    CREDENTIALS_MASTER_KEY_ID: masterKey.kid,
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

/** The summed value of a counter's points (or a histogram's counts) whose attributes include `attributes`. */
async function counted(name: string, attributes: Record<string, unknown>): Promise<number> {
  return (await reader.points(name))
    .filter((point) => Object.entries(attributes).every(([key, value]) => point.attributes[key] === value))
    .reduce((sum, point) => sum + (typeof point.value === 'number' ? point.value : point.value.count), 0);
}

/** Every attribute value of every metric collected now, as text. */
async function allAttributeText(): Promise<string> {
  const metrics = await reader.metrics();
  return JSON.stringify(metrics.map((metric) => metric.dataPoints.map((point) => point.attributes)));
}

describe('assembler metrics', () => {
  it('when a task is assembled and published, it is counted and timed as `published`, and its agent and credential came from memory', async () => {
    const before = {
      published: await counted(AssemblerMetric.TASKS, { outcome: 'published' }),
      timed: await counted(AssemblerMetric.DURATION, { outcome: 'published' }),
      agents: await counted(AssemblerMetric.LOOKUPS, { registry: 'agents', source: 'memory' }),
      credentials: await counted(AssemblerMetric.LOOKUPS, { registry: 'credentials', source: 'memory' }),
    };
    const task = receivedTask(AGENT.workflow_id);
    const published = client.subscribe(taskAssembledSubject(ACCOUNT), { max: 1 });
    await js.publish(taskReceivedSubject(ACCOUNT), JSON.stringify(task));
    for await (const msg of published) {
      expect(AssembledTask.parse(msg.json()).task_meta.trace_id).toBe(task.task_meta.trace_id);
    }

    await waitFor(
      async () => (await counted(AssemblerMetric.TASKS, { outcome: 'published' })) === before.published + 1,
      {
        description: 'the published task to be counted',
      },
    );
    expect(await counted(AssemblerMetric.DURATION, { outcome: 'published' })).toBe(before.timed + 1);
    const duration = (await reader.points(AssemblerMetric.DURATION)).find(
      (point) => point.attributes['outcome'] === 'published',
    );
    expect(typeof duration?.value === 'object' && duration.value.sum).toBeGreaterThan(0);
    expect(await counted(AssemblerMetric.LOOKUPS, { registry: 'agents', source: 'memory' })).toBe(
      before.agents + 1,
    );
    expect(await counted(AssemblerMetric.LOOKUPS, { registry: 'credentials', source: 'memory' })).toBe(
      before.credentials + 1,
    );
  });

  it('when a task names an unknown agent, it is counted and timed by its error code, and the agent was looked for in the bucket', async () => {
    const before = {
      notFound: await counted(AssemblerMetric.TASKS, { outcome: 'not_found' }),
      timed: await counted(AssemblerMetric.DURATION, { outcome: 'not_found' }),
      kv: await counted(AssemblerMetric.LOOKUPS, { registry: 'agents', source: 'kv' }),
    };
    const task = receivedTask('no_such_agent');
    await js.publish(taskReceivedSubject(ACCOUNT), JSON.stringify(task));
    for await (const event of followTaskEvents(js, {
      accountId: ACCOUNT,
      traceId: task.task_meta.trace_id,
      signal: AbortSignal.timeout(15_000),
    })) {
      if (!isTerminalEvent(event)) continue;
      expect(event).toMatchObject({ type: 'error', data: { code: 'NOT_FOUND' } });
      break;
    }

    await waitFor(
      async () => (await counted(AssemblerMetric.TASKS, { outcome: 'not_found' })) === before.notFound + 1,
      {
        description: 'the ended task to be counted',
      },
    );
    expect(await counted(AssemblerMetric.DURATION, { outcome: 'not_found' })).toBe(before.timed + 1);
    // The mirror holds the whole bucket, yet an unknown name is read once more per scope before it counts
    // as unknown (the account's and the shared catalogue's).
    expect(await counted(AssemblerMetric.LOOKUPS, { registry: 'agents', source: 'kv' })).toBe(before.kv + 2);
    // No trace id, account or credential value is an attribute.
    const text = await allAttributeText();
    expect(text).not.toContain(task.task_meta.trace_id);
    expect(text).not.toContain(ACCOUNT);
    expect(text).not.toContain(CANARY.MODEL_KEY);
  });
});
