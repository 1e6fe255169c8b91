/**
 * Tasks needing native tools, on real NATS with the assembler in-process: a task whose agent binds a
 * native tool is published on the subject naming its native classes (where only executors providing them
 * read), and a task needing a class no running executor announces ends at assembly with one clear error
 * event instead of waiting where nobody reads.
 */
import { randomBytes } from 'node:crypto';
import {
  AgentStore,
  CredentialStore,
  encodeJson,
  ensureMeshStreams,
  followTaskEvents,
  openMeshBuckets,
  openNativeProvidersBucket,
  ToolStore,
  SHARED_CATALOGUE,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  AssembledTask,
  isTerminalEvent,
  taskReceivedSubject,
  type NativeProviderAnnouncement,
  type NativeTool,
  type ReceivedTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import { createLogger, loadConfig, type RunningService } from '@agentmesh/runtime';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, qichachaAgent, receivedTask, USER } from './__fixtures__/assembly.js';
import { startAssembler } from './assembler-service.js';
import { assemblerConfigSchema } from './config.js';

const executorKey = generateVaultKeyPair('exec-routing');
const masterKey = { kid: 'master-routing', key: randomBytes(32).toString('base64') };

const executeScript: NativeTool = {
  type: 'NATIVE',
  name: 'execute_script',
  description: 'Runs a script of the scripts directory.',
  parameters: { type: 'object', properties: { script_path: { type: 'string' } }, required: ['script_path'] },
  class_name: 'ExecuteScriptTool',
};
const deepSearch: NativeTool = {
  type: 'NATIVE',
  name: 'deep_search',
  description: 'Searches deeply.',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  class_name: 'DeepSearchTool',
};

let nats: NatsServer;
let client: NatsConnection;
let assemblerConnection: NatsConnection;
let js: JetStreamClient;
let statuses: TaskStatusStore;
let assembler: RunningService;
/** Subject → trace ids of the assembled tasks seen on it. */
const assembledOn = new Map<string, string[]>();

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url, name: 'test-client' });
  client.subscribe('mesh.tasks.assembled.>', {
    callback: (_error, msg) => {
      const traceId = AssembledTask.parse(msg.json()).task_meta.trace_id;
      assembledOn.set(msg.subject, [...(assembledOn.get(msg.subject) ?? []), traceId]);
    },
  });
  js = jetstream(client);
  await ensureMeshStreams(await jetstreamManager(client));
  const buckets = await openMeshBuckets(js);
  statuses = new TaskStatusStore(buckets.tasks);
  const agents = new AgentStore(buckets.agents);
  await agents.put(
    SHARED_CATALOGUE,
    qichachaAgent({ workflow_id: 'script_runner', tools: ['execute_script'] }),
  );
  await agents.put(
    SHARED_CATALOGUE,
    qichachaAgent({ workflow_id: 'deep_researcher', tools: ['deep_search'] }),
  );
  // In the catalogue (an executor announced it once), but no executor announces it now.
  await new ToolStore(buckets.tools).put(SHARED_CATALOGUE, deepSearch);
  await new CredentialStore(buckets.credentials, { current: masterKey }).put(
    ACCOUNT,
    USER,
    'MODEL_KEY',
    'model-key',
  );
  // What an executor with a scripts directory announces (its instance key, its class's tools).
  const providers = await openNativeProvidersBucket(js);
  const announcement: NativeProviderAnnouncement = {
    class_name: 'ExecuteScriptTool',
    executor_id: 'exec-with-scripts',
    announced_at: new Date().toISOString(),
    tools: [executeScript],
  };
  await providers.put('ExecuteScriptTool.exec-with-scripts_0a1b2c3d', encodeJson(announcement));

  const config = loadConfig(assemblerConfigSchema, {
    NATS_URL: nats.url,
    VAULT_KEY_ID: executorKey.kid,
    VAULT_PUBLIC_KEY: executorKey.publicKey,
    CREDENTIALS_MASTER_KEY: masterKey.key,
    CREDENTIALS_MASTER_KEY_ID: masterKey.kid,
  });
  assemblerConnection = await connect({ servers: nats.url, name: 'assembler' });
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
  await nats?.stop();
});

async function submit(task: ReceivedTask): Promise<void> {
  const meta = task.task_meta;
  await statuses.create({
    trace_id: meta.trace_id,
    account_id: meta.account_id,
    workflow_id: meta.workflow_id,
    status: 'queued',
    attempt: 0,
    submitted_at: meta.submitted_at,
    updated_at: new Date().toISOString(),
  });
  await js.publish(taskReceivedSubject(meta.account_id), encodeJson(task), { msgID: meta.trace_id });
}

async function eventsOf(task: ReceivedTask): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: task.task_meta.account_id,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(15_000),
  })) {
    events.push(event);
  }
  return events;
}

const subjectsOf = (traceId: string): string[] =>
  [...assembledOn].filter(([, traceIds]) => traceIds.includes(traceId)).map(([subject]) => subject);

describe('routing tasks by the native tools they need', () => {
  it('a task bound to execute_script is published on mesh.tasks.assembled.<account>.ExecuteScriptTool, which only executors with that class read', async () => {
    const task = receivedTask('script_runner');
    await submit(task);

    const subjects = await waitFor(
      () => {
        const seen = subjectsOf(task.task_meta.trace_id);
        return seen.length > 0 ? seen : undefined;
      },
      { timeoutMs: 15_000, description: 'the assembled task' },
    );
    expect(subjects).toEqual([`mesh.tasks.assembled.${ACCOUNT}.ExecuteScriptTool`]);
  });

  it('a task bound to a native tool no running executor provides ends with one SERVICE_UNAVAILABLE error event naming the class, and is not published', async () => {
    const task = receivedTask('deep_researcher');
    await submit(task);

    const events = await eventsOf(task);

    expect(events.filter(isTerminalEvent)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      data: {
        code: 'SERVICE_UNAVAILABLE',
        retryable: true,
        detail: { native_classes: ['DeepSearchTool'], tools: ['deep_search'] },
      },
    });
    expect(String((events.at(-1)?.data as { message?: unknown }).message)).toMatch(
      /no running executor provides the native tool class\(es\) DeepSearchTool/,
    );
    expect(subjectsOf(task.task_meta.trace_id)).toEqual([]);
  });
});
