/**
 * The assembler on real NATS, run in-process with a tools directory that changes while it runs: files
 * dropped in, broken, edited and deleted take effect in KV `mesh_tools` and in the next assembled task,
 * with no restart (issue 5, must-show 1).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  AgentStore,
  CredentialStore,
  encodeJson,
  ensureMeshStreams,
  followTaskEvents,
  openMeshBuckets,
  openNativeProvidersBucket,
  ToolStore,
  scopedRegistryView,
  SHARED_CATALOGUE,
  TaskStatusStore,
  type RegistryBucket,
  type ScopedPluginStore,
} from '@agentmesh/bus';
import {
  AssembledTask,
  filterTools,
  SCRIPT_RUNNER_CLASS,
  taskAssembledSubject,
  taskReceivedSubject,
  type ReceivedTask,
  type TaskEvent,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { createLogger, loadConfig, type RunningService } from '@agentmesh/runtime';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  CANARY,
  importTool,
  qichachaAgent,
  qichachaTool,
  receivedTask,
  seedFixture,
  USER,
} from './__fixtures__/assembly.js';
import { startAssembler } from './assembler-service.js';
import { assemblerConfigSchema } from './config.js';

const executorKey = generateVaultKeyPair('exec-tools');
const masterKey = { kid: 'master-tools', key: randomBytes(32).toString('base64') };
const WAIT = { timeoutMs: 15_000 };

let nats: NatsServer;
let client: NatsConnection;
let assemblerConnection: NatsConnection;
let js: JetStreamClient;
/** The shared catalogue, where tool files go. */
let kv: RegistryBucket;
let plugins: ScopedPluginStore;
let agents: AgentStore;
let statuses: TaskStatusStore;
let assembler: RunningService;
let toolsDir: string;
const assembled: AssembledTask[] = [];
const logLines: string[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url, name: 'test-client' });
  // Tasks bound to script tools come out on the subject of the executors that run scripts.
  for (const subject of [
    taskAssembledSubject(ACCOUNT),
    taskAssembledSubject(ACCOUNT, [SCRIPT_RUNNER_CLASS]),
  ]) {
    client.subscribe(subject, {
      callback: (_error, msg) => void assembled.push(AssembledTask.parse(msg.json())),
    });
  }
  js = jetstream(client);
  await ensureMeshStreams(await jetstreamManager(client));
  const buckets = await openMeshBuckets(js);
  kv = scopedRegistryView(buckets.tools, SHARED_CATALOGUE);
  plugins = new ToolStore(buckets.tools).scoped(SHARED_CATALOGUE);
  agents = new AgentStore(buckets.agents);
  statuses = new TaskStatusStore(buckets.tasks);
  const credentials = new CredentialStore(buckets.credentials, { current: masterKey });
  await credentials.put(ACCOUNT, USER, 'MODEL_KEY', CANARY.MODEL_KEY);
  // An executor with a scripts directory runs (announcing the script runner class for longer than this file
  // takes), so tasks bound to script tools are assembled rather than ended for want of one.
  const providers = await openNativeProvidersBucket(js, { ttlMs: 10 * 60_000 });
  await providers.put(
    `${SCRIPT_RUNNER_CLASS}.exec-scripts_0a1b2c3d`,
    encodeJson({
      class_name: SCRIPT_RUNNER_CLASS,
      executor_id: 'exec-scripts',
      announced_at: new Date().toISOString(),
      tools: [],
    }),
  );

  toolsDir = await mkdtemp(join(tmpdir(), 'assembler-tools-dir-'));
  const config = loadConfig(assemblerConfigSchema, {
    NATS_URL: nats.url,
    VAULT_KEY_ID: executorKey.kid,
    VAULT_PUBLIC_KEY: executorKey.publicKey,
    CREDENTIALS_MASTER_KEY: masterKey.key,
    CREDENTIALS_MASTER_KEY_ID: masterKey.kid,
    TOOLS_DIR: toolsDir,
    TOOLS_WATCH_DEBOUNCE_MS: '50',
  });
  const log = createLogger({
    service: 'assembler',
    level: 'debug',
    destination: { write: (line: string) => void logLines.push(line) },
  });
  assemblerConnection = await connect({ servers: nats.url, name: 'assembler' });
  assembler = await startAssembler({ config, log, nc: assemblerConnection });
});

afterAll(async () => {
  await assembler?.stop();
  await assemblerConnection?.drain();
  await client?.drain();
  await nats?.stop();
  if (toolsDir) await rm(toolsDir, { recursive: true, force: true });
});

async function putFile(path: string, content: unknown): Promise<void> {
  await mkdir(dirname(join(toolsDir, path)), { recursive: true });
  await writeFile(join(toolsDir, path), typeof content === 'string' ? content : JSON.stringify(content));
}

function logRecords(): Record<string, unknown>[] {
  return logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** An agent bound to `tools`, then a task for it, as the gateway submits it. */
async function submitTaskFor(workflowId: string, tools: string[]): Promise<ReceivedTask> {
  await agents.put(SHARED_CATALOGUE, qichachaAgent({ workflow_id: workflowId, tools }));
  const task = receivedTask(workflowId);
  const meta = task.task_meta;
  await statuses.create({
    trace_id: meta.trace_id,
    account_id: meta.account_id,
    workflow_id: meta.workflow_id,
    status: 'queued',
    attempt: 0,
    updated_at: new Date().toISOString(),
  });
  await js.publish(taskReceivedSubject(meta.account_id), encodeJson(task), { msgID: meta.trace_id });
  return task;
}

async function assembledToolsOf(task: ReceivedTask): Promise<ToolDefinition[]> {
  const found = await waitFor(
    () => assembled.find(({ task_meta }) => task_meta.trace_id === task.task_meta.trace_id),
    { ...WAIT, description: `the assembled task ${task.task_meta.trace_id}` },
  );
  return found.runtime_config.tools;
}

async function eventsOf(task: ReceivedTask): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: task.task_meta.account_id,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(WAIT.timeoutMs),
  })) {
    events.push(event);
  }
  return events;
}

const dataProcessorJson = seedFixture('003-s2.2.2-core-fields-external-script.tool.json') as Record<
  string,
  unknown
>;
const dataProcessor = importTool(dataProcessorJson);
const pythonRunnerJson = seedFixture('003-s2.2.3-execute-python-script.tool.json') as Record<string, unknown>;

describe('a tools directory that changes while the assembler runs', () => {
  it('a *.tool.json dropped into the directory after start is stored in mesh_tools and the next task bound to it is assembled with it, without a restart', async () => {
    await putFile('scripts/data-processor.tool.json', dataProcessorJson);

    const stored = await waitFor(() => plugins.get(dataProcessor.name), {
      ...WAIT,
      description: 'the dropped-in tool in mesh_tools',
    });
    expect(stored).toEqual(dataProcessor);

    const task = await submitTaskFor('data_bot', [dataProcessor.name]);
    expect(await assembledToolsOf(task)).toEqual([dataProcessor]);
  });

  it('a malformed *.tool.json dropped in is logged with its path and reason and skipped, while a good file written with it is loaded', async () => {
    const { handler: _handler, ...withoutHandler } = pythonRunnerJson;
    await putFile('broken/no-handler.tool.json', { ...withoutHandler, toolId: 'broken:no-handler' });
    await putFile('broken/half-written.tool.json', '{"toolId": "broken:half');
    await putFile('python-runner.tool.json', pythonRunnerJson);

    await waitFor(() => plugins.get('core__execute-python-script'), WAIT);
    const rejected = await waitFor(
      () => {
        const lines = logRecords().filter((record) => record.msg === 'tool file rejected; skipped');
        const paths = new Set(lines.map((record) => record.path));
        return (
          paths.has('broken/no-handler.tool.json') && paths.has('broken/half-written.tool.json') && lines
        );
      },
      { ...WAIT, description: 'both malformed files reported' },
    );
    expect(rejected).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        tools_dir: toolsDir,
        path: 'broken/no-handler.tool.json',
        reason: expect.stringMatching(/^invalid tool-json definition: handler/),
      }),
    );
    expect(rejected).toContainEqual(
      expect.objectContaining({
        path: 'broken/half-written.tool.json',
        reason: expect.stringMatching(/^not valid JSON/),
      }),
    );
    expect(await plugins.get('broken__no-handler')).toBeUndefined();
    expect(await plugins.get('broken__half')).toBeUndefined();
  });

  it('editing a tool file updates its tool in mesh_tools and in the next assembled task', async () => {
    await putFile('scripts/data-processor.tool.json', { ...dataProcessorJson, version: '1.1.0' });

    const edited = await waitFor(
      async () => {
        const tool = await plugins.get(dataProcessor.name);
        return tool?.type === 'SCRIPT' && tool.version === '1.1.0' && tool;
      },
      { ...WAIT, description: 'the edited version in mesh_tools' },
    );
    expect(edited).toEqual({ ...dataProcessor, version: '1.1.0' });

    const task = await submitTaskFor('data_bot', [dataProcessor.name]);
    expect(await assembledToolsOf(task)).toEqual([{ ...dataProcessor, version: '1.1.0' }]);
  });

  it('deleting a tool file removes its tool: a task bound to it then ends with NOT_FOUND naming it', async () => {
    expect(await plugins.get(dataProcessor.name)).toBeDefined();
    await rm(join(toolsDir, 'scripts/data-processor.tool.json'));

    await waitFor(async () => (await plugins.get(dataProcessor.name)) === undefined, {
      ...WAIT,
      description: 'the tool removed from mesh_tools',
    });

    const task = await submitTaskFor('data_bot', [dataProcessor.name]);
    const events = await eventsOf(task);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'error',
        data: expect.objectContaining({
          code: 'NOT_FOUND',
          detail: expect.objectContaining({ missing: [dataProcessor.name] }),
        }),
      }),
    ]);
  });

  it('a tool managed through the API is not overwritten by a file of the same name dropped in later', async () => {
    const managed = { ...qichachaTool(), description: 'managed through the API' };
    await plugins.put(managed);
    const revision = (await kv.get(managed.name))?.revision;

    await putFile('qichacha.json', seedFixture('000-s2-plugin.json'));

    await waitFor(
      () =>
        logRecords().some(
          (record) =>
            record.msg === 'tool is managed through the API; file not applied' &&
            record.path === 'qichacha.json',
        ),
      { ...WAIT, description: 'the file seen and not applied' },
    );
    expect(await plugins.get(managed.name)).toEqual(managed);
    expect((await kv.get(managed.name))?.revision).toBe(revision);
  });

  it('the registry filled from files is listed by tag and by namespace', async () => {
    await putFile('image/filter.tool.json', seedFixture('003-s2.2.2-core-fields-service-method.tool.json'));
    await waitFor(() => plugins.get('vendor__apply-image-filter'), WAIT);

    const tools = await plugins.list();

    expect(filterTools(tools, { tag: 'image' }).map(({ name }) => name)).toEqual([
      'vendor__apply-image-filter',
    ]);
    expect(filterTools(tools, { namespace: 'core' }).map(({ name }) => name)).toEqual([
      'core__execute-python-script',
    ]);
    expect(filterTools(tools, { tag: 'python', namespace: 'core' }).map(({ name }) => name)).toEqual([
      'core__execute-python-script',
    ]);
  });
});
