/**
 * The assembler on real NATS, run in-process: received tasks in, assembled tasks or one terminal `error`
 * event out, with every message on the server and every log line checked for canary credential values.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AgentStore,
  CredentialStore,
  encodeJson,
  ensureMeshStreams,
  followTaskEvents,
  openMeshBuckets,
  accountScope,
  ToolStore,
  SHARED_CATALOGUE,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  AssembledTask,
  CancelSignal,
  cancelSubject,
  Consumers,
  MODEL_API_KEY_VAULT_ENTRY,
  Streams,
  taskAssembledSubject,
  taskEventLogSubject,
  taskReceivedSubject,
  type ReceivedTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  createLogger,
  injectTraceContext,
  loadConfig,
  startTelemetry,
  taskRootContext,
  type RunningService,
  type Telemetry,
} from '@agentmesh/runtime';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair, openTaskVault } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  CANARY,
  qichachaAgent,
  receivedTask,
  seedFixture,
  USER,
  weatherTool,
} from './__fixtures__/assembly.js';
import { startAssembler } from './assembler-service.js';
import { assemblerConfigSchema } from './config.js';

interface SeenMessage {
  subject: string;
  data: string;
  headers: string;
}

const executorKey = generateVaultKeyPair('exec-int');
const keyring = new Map([[executorKey.kid, executorKey.privateKey]]);
const masterKey = { kid: 'master-int', key: randomBytes(32).toString('base64') };

let nats: NatsServer;
let telemetry: Telemetry;
const spans = new InMemorySpanExporter();
let client: NatsConnection;
let assemblerConnection: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let plugins: ToolStore;
let agents: AgentStore;
let credentials: CredentialStore;
let statuses: TaskStatusStore;
let assembler: RunningService;
let toolsDir: string;
/** Queued, then cancelled, while no assembler was running: no cancel broadcast reached one. */
let cancelledWhileDown: ReceivedTask;
const seen: SeenMessage[] = [];
const logLines: string[] = [];

function headerText(headers: MsgHdrs | undefined): string {
  if (!headers) return '';
  return headers
    .keys()
    .map((key) => `${key}: ${headers.get(key)}`)
    .join('\n');
}

beforeAll(async () => {
  nats = await startNats();
  telemetry = startTelemetry({
    service: 'assembler',
    env: {},
    spanProcessors: [new SimpleSpanProcessor({ exporter: spans })],
  });
  client = await connect({ servers: nats.url, name: 'test-client' });
  // Everything on every subject, for the whole file: the canary check at the end reads it.
  client.subscribe('>', {
    callback: (_error, msg) => {
      seen.push({ subject: msg.subject, data: msg.string(), headers: headerText(msg.headers) });
    },
  });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  await ensureMeshStreams(jsm);
  const buckets = await openMeshBuckets(js);
  plugins = new ToolStore(buckets.tools);
  agents = new AgentStore(buckets.agents);
  credentials = new CredentialStore(buckets.credentials, { current: masterKey });
  statuses = new TaskStatusStore(buckets.tasks);

  await agents.put(SHARED_CATALOGUE, qichachaAgent());
  await credentials.put(ACCOUNT, USER, 'QCC_KEY', CANARY.QCC_KEY);
  await credentials.put(ACCOUNT, USER, 'QCC_SECRET', CANARY.QCC_SECRET);
  await credentials.put(ACCOUNT, USER, 'MODEL_KEY', CANARY.MODEL_KEY);

  toolsDir = await mkdtemp(join(tmpdir(), 'assembler-int-tools-'));
  await writeFile(join(toolsDir, 'qichacha.json'), JSON.stringify(seedFixture('000-s2-plugin.json')));

  const config = loadConfig(assemblerConfigSchema, {
    NATS_URL: nats.url,
    LOG_LEVEL: 'debug',
    VAULT_KEY_ID: executorKey.kid,
    VAULT_PUBLIC_KEY: executorKey.publicKey,
    CREDENTIALS_MASTER_KEY: masterKey.key,
    CREDENTIALS_MASTER_KEY_ID: masterKey.kid,
    TOOLS_DIR: toolsDir,
    // Same host clock as the server's: tasks stored after the assembler listens rely on the broadcasts.
    CLOCK_SKEW_TOLERANCE_MS: '0',
  });
  const log = createLogger({
    service: 'assembler',
    level: 'debug',
    destination: { write: (line: string) => void logLines.push(line) },
  });
  cancelledWhileDown = receivedTask('company_research');
  await submit(cancelledWhileDown, { cancelRequested: true });
  assemblerConnection = await connect({ servers: nats.url, name: 'assembler' });
  assembler = await startAssembler({ config, log, nc: assemblerConnection });
});

afterAll(async () => {
  await assembler?.stop();
  await assemblerConnection?.drain();
  await client?.drain();
  await telemetry?.shutdown();
  await nats?.stop();
  if (toolsDir) await rm(toolsDir, { recursive: true, force: true });
});

/**
 * As the gateway does: status `queued`, then the task on the received subject, deduplicated by trace_id.
 * `cancelRequested`: the status carries a cancel request already (as when the cancel came while no
 * assembler listened).
 */
async function submit(
  task: ReceivedTask,
  options: { msgID?: string; cancelRequested?: boolean } = {},
): Promise<void> {
  const meta = task.task_meta;
  await statuses.create({
    trace_id: meta.trace_id,
    account_id: meta.account_id,
    workflow_id: meta.workflow_id,
    status: 'queued',
    attempt: 0,
    submitted_at: meta.submitted_at,
    updated_at: new Date().toISOString(),
    ...(options.cancelRequested ? { cancel_requested_at: new Date().toISOString() } : {}),
  });
  await js.publish(taskReceivedSubject(meta.account_id), encodeJson(task), {
    msgID: options.msgID ?? meta.trace_id,
    headers: injectTraceContext(undefined, taskRootContext(meta.trace_id)),
  });
}

function assembledMessages(task: ReceivedTask): { message: SeenMessage; task: AssembledTask }[] {
  const subject = taskAssembledSubject(task.task_meta.account_id);
  return seen
    .filter((message) => message.subject === subject)
    .map((message) => ({ message, task: AssembledTask.parse(JSON.parse(message.data)) }))
    .filter(({ task: assembled }) => assembled.task_meta.trace_id === task.task_meta.trace_id);
}

async function assembledFor(task: ReceivedTask): Promise<{ message: SeenMessage; task: AssembledTask }> {
  return waitFor(() => assembledMessages(task)[0], {
    timeoutMs: 15_000,
    description: `the assembled task ${task.task_meta.trace_id}`,
  });
}

/** Waits until the assembler has acked everything it was given. */
async function assemblerIdle(): Promise<void> {
  await waitFor(
    async () => {
      const info = await jsm.consumers.info(Consumers.ASSEMBLER.stream, Consumers.ASSEMBLER.durable_name);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    { timeoutMs: 15_000, description: 'the assembler consumer to have nothing pending' },
  );
}

/** Every event of the task up to its terminal one, then how many events the stream holds for it. */
async function eventsOf(task: ReceivedTask): Promise<{ events: TaskEvent[]; stored: number }> {
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId,
    traceId,
    signal: AbortSignal.timeout(15_000),
  })) {
    events.push(event);
  }
  await assemblerIdle();
  const subject = taskEventLogSubject(accountId, traceId);
  const info = await jsm.streams.info(Streams.EVENTS.name, { subjects_filter: subject });
  return { events, stored: info.state.subjects?.[subject] ?? 0 };
}

describe('the assembler on NATS', () => {
  it('a received task for a known agent comes out on mesh.tasks.assembled.<account> with the seeded tool and a vault only the executors open', async () => {
    const task = receivedTask('company_research');
    await submit(task);

    const { message, task: assembled } = await assembledFor(task);

    expect(assembled.runtime_config.tools.map((tool) => tool.name)).toEqual(['search_company_basic']);
    expect(assembled.input.messages[0]).toEqual({
      role: 'system',
      content: 'You research companies. Use the tools.',
    });
    expect(openTaskVault(assembled, keyring)).toEqual({
      QCC_KEY: CANARY.QCC_KEY,
      QCC_SECRET: CANARY.QCC_SECRET,
      [MODEL_API_KEY_VAULT_ENTRY]: CANARY.MODEL_KEY,
    });
    // One trace per task: the assembled message continues the task's trace through the `assemble` span.
    expect(message.headers).toContain(`traceparent: 00-${task.task_meta.trace_id}-`);
    const assembleSpan = await waitFor(() =>
      spans
        .getFinishedSpans()
        .find((span) => span.name === 'assemble' && span.spanContext().traceId === task.task_meta.trace_id),
    );
    expect(message.headers).toContain(assembleSpan.spanContext().spanId);
    await assemblerIdle();
    expect((await statuses.get(task.task_meta.account_id, task.task_meta.trace_id))?.status).toBe('queued');
  });

  it('when no agent has the workflow_id, the task ends with exactly one error event NOT_FOUND and status error', async () => {
    const task = receivedTask('no_such_agent');
    await submit(task);

    const { events, stored } = await eventsOf(task);

    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      seq: 1,
      attempt: 1,
      type: 'error',
      data: { code: 'NOT_FOUND', retryable: false, detail: { workflow_id: 'no_such_agent' } },
    });
    expect(stored).toBe(1);
    expect(await statuses.get(task.task_meta.account_id, task.task_meta.trace_id)).toMatchObject({
      status: 'error',
      last_seq: 1,
      error: { code: 'NOT_FOUND' },
    });
    expect(assembledMessages(task)).toEqual([]);
  });

  it('when the user has stored none of the keys, the task ends with one CREDENTIALS_MISSING error naming every missing key', async () => {
    const task = receivedTask('company_research', { userId: 'user-without-keys' });
    await submit(task);

    const { events, stored } = await eventsOf(task);

    expect(stored).toBe(1);
    expect(events.map((event) => event.type)).toEqual(['error']);
    const data = events[0]?.type === 'error' ? events[0].data : undefined;
    expect(data?.code).toBe('CREDENTIALS_MISSING');
    expect(data?.detail).toEqual({
      missing: ['MODEL_KEY', 'QCC_KEY', 'QCC_SECRET'],
      account_id: ACCOUNT,
      user_id: 'user-without-keys',
      looked_in: ['user', 'account'],
    });
    expect(data?.message).toMatch(/MODEL_KEY.*QCC_KEY.*QCC_SECRET/);
    expect(data?.message).toContain(`user "user-without-keys" of account "${ACCOUNT}"`);
    expect(data?.message).toContain(`account-wide credentials of account "${ACCOUNT}"`);
    expect((await statuses.get(task.task_meta.account_id, task.task_meta.trace_id))?.error?.code).toBe(
      'CREDENTIALS_MISSING',
    );
  });

  it("when the account stores credentials for all its users, a user with none of their own gets the account's sealed in, and a user's own wins", async () => {
    const account = 'wide-account';
    await credentials.putAccountCredential(account, 'QCC_KEY', 'account-wide-qcc-key');
    await credentials.putAccountCredential(account, 'QCC_SECRET', 'account-wide-qcc-secret');
    await credentials.putAccountCredential(account, 'MODEL_KEY', 'account-wide-model-key');
    await credentials.put(account, 'picky-user', 'MODEL_KEY', 'picky-own-model-key');

    const anyone = receivedTask('company_research', { accountId: account, userId: 'anyone' });
    const picky = receivedTask('company_research', { accountId: account, userId: 'picky-user' });
    await submit(anyone);
    await submit(picky);

    expect(openTaskVault((await assembledFor(anyone)).task, keyring)).toEqual({
      QCC_KEY: 'account-wide-qcc-key',
      QCC_SECRET: 'account-wide-qcc-secret',
      [MODEL_API_KEY_VAULT_ENTRY]: 'account-wide-model-key',
    });
    expect(openTaskVault((await assembledFor(picky)).task, keyring)).toEqual({
      QCC_KEY: 'account-wide-qcc-key',
      QCC_SECRET: 'account-wide-qcc-secret',
      [MODEL_API_KEY_VAULT_ENTRY]: 'picky-own-model-key',
    });
  });

  it("a task of another account never gets an account's account-wide credentials: CREDENTIALS_MISSING names its own account and user", async () => {
    await credentials.putAccountCredential('holder-account', 'MODEL_KEY', 'holder-only-model-key');
    await credentials.putAccountCredential('holder-account', 'QCC_KEY', 'holder-only-qcc-key');
    await credentials.putAccountCredential('holder-account', 'QCC_SECRET', 'holder-only-qcc-secret');
    const task = receivedTask('company_research', { accountId: 'stranger-account', userId: 'anyone' });
    await submit(task);

    const { events } = await eventsOf(task);

    const data = events[0]?.type === 'error' ? events[0].data : undefined;
    expect(data).toMatchObject({
      code: 'CREDENTIALS_MISSING',
      detail: {
        missing: ['MODEL_KEY', 'QCC_KEY', 'QCC_SECRET'],
        account_id: 'stranger-account',
        user_id: 'anyone',
      },
    });
    expect(assembledMessages(task)).toEqual([]);
  });

  it('when the agent is bound to a tool the registry does not hold, the task ends with one NOT_FOUND error naming the tool', async () => {
    await agents.put(
      SHARED_CATALOGUE,
      qichachaAgent({ workflow_id: 'half_configured', tools: ['search_company_basic', 'ghost_tool'] }),
    );
    const task = receivedTask('half_configured');
    await submit(task);

    const { events, stored } = await eventsOf(task);

    expect(stored).toBe(1);
    expect(events[0]).toMatchObject({
      type: 'error',
      data: {
        code: 'NOT_FOUND',
        message: expect.stringContaining('ghost_tool'),
        detail: { missing: ['ghost_tool'] },
      },
    });
  });

  it('a cancel requested before assembly ends the task with CANCELLED and nothing reaches the executors', async () => {
    const task = receivedTask('company_research');
    const meta = task.task_meta;
    // As the gateway cancels: the request in the status record, then the broadcast.
    await statuses.create({
      trace_id: meta.trace_id,
      account_id: ACCOUNT,
      workflow_id: 'company_research',
      status: 'queued',
      attempt: 0,
      updated_at: new Date().toISOString(),
      cancel_requested_at: new Date().toISOString(),
    });
    client.publish(
      cancelSubject(ACCOUNT, meta.trace_id),
      encodeJson(
        CancelSignal.parse({
          account_id: ACCOUNT,
          trace_id: meta.trace_id,
          requested_at: new Date().toISOString(),
        }),
      ),
    );
    await client.flush();
    await submit(task);

    const { events, stored } = await eventsOf(task);

    expect(stored).toBe(1);
    expect(events[0]).toMatchObject({ type: 'error', data: { code: 'CANCELLED', retryable: false } });
    expect((await statuses.get(meta.account_id, meta.trace_id))?.status).toBe('cancelled');
    expect(assembledMessages(task)).toEqual([]);
  });

  it('a task queued and cancelled while no assembler ran ends CANCELLED once one starts, and nothing reaches the executors', async () => {
    const { events, stored } = await eventsOf(cancelledWhileDown);

    expect(stored).toBe(1);
    expect(events[0]).toMatchObject({ type: 'error', data: { code: 'CANCELLED', retryable: false } });
    expect(assembledMessages(cancelledWhileDown)).toEqual([]);
  });

  it('a warm task reads no KV entry: agent, tools, credentials and cancel state come from memory', async () => {
    const warmUp = receivedTask('company_research');
    await submit(warmUp);
    await assembledFor(warmUp);
    const from = seen.length;

    const task = receivedTask('company_research');
    await submit(task);
    await assembledFor(task);

    const kvReads = seen
      .slice(from)
      .filter((message) => /^\$JS\.API\.(DIRECT\.GET|STREAM\.MSG\.GET)\.KV_/.test(message.subject));
    expect(kvReads.map((message) => message.subject)).toEqual([]);
  });

  it("when an agent's tools change, the next task gets the new tools; once it is deleted, the next task ends NOT_FOUND", async () => {
    await plugins.put(SHARED_CATALOGUE, weatherTool());
    await credentials.put(ACCOUNT, USER, 'WEATHER_TOKEN', CANARY.WEATHER_TOKEN);
    await agents.put(SHARED_CATALOGUE, qichachaAgent({ workflow_id: 'changing_bot' }));
    const first = receivedTask('changing_bot');
    await submit(first);
    const toolsOf = async (task: ReceivedTask): Promise<string[]> =>
      (await assembledFor(task)).task.runtime_config.tools.map((tool) => tool.name);
    expect(await toolsOf(first)).toEqual(['search_company_basic']);

    await agents.put(
      SHARED_CATALOGUE,
      qichachaAgent({ workflow_id: 'changing_bot', tools: ['search_company_basic', 'get_weather'] }),
    );
    const second = receivedTask('changing_bot');
    await submit(second);
    expect(await toolsOf(second)).toEqual(['search_company_basic', 'get_weather']);

    await agents.delete(SHARED_CATALOGUE, 'changing_bot');
    const third = receivedTask('changing_bot');
    await submit(third);
    const { events } = await eventsOf(third);
    expect(events[0]).toMatchObject({
      type: 'error',
      data: { code: 'NOT_FOUND', detail: { workflow_id: 'changing_bot' } },
    });
  });

  it('a tool stored in mesh_tools after start is usable by the next task without a restart', async () => {
    await plugins.put(SHARED_CATALOGUE, weatherTool());
    await agents.put(SHARED_CATALOGUE, qichachaAgent({ workflow_id: 'weather_bot', tools: ['get_weather'] }));
    await credentials.put(ACCOUNT, USER, 'WEATHER_TOKEN', CANARY.WEATHER_TOKEN);
    const task = receivedTask('weather_bot');
    await submit(task);

    const { task: assembled } = await assembledFor(task);

    expect(assembled.runtime_config.tools.map((tool) => tool.name)).toEqual(['get_weather']);
    expect(openTaskVault(assembled, keyring)).toEqual({
      WEATHER_TOKEN: CANARY.WEATHER_TOKEN,
      [MODEL_API_KEY_VAULT_ENTRY]: CANARY.MODEL_KEY,
    });
  });

  it("each account's task runs its own agent and tools, else the shared ones, and never another account's", async () => {
    // Tenant A defines its own `company_research` (another model URL) and its own `get_weather`.
    const tenantA = 'tenant_a';
    await agents.put(
      accountScope(tenantA),
      qichachaAgent({
        tools: ['get_weather'],
        model: {
          model_name: 'a-model',
          base_url: 'http://127.0.0.1:1/tenant-a',
          api_key_credential: 'MODEL_KEY',
        },
      }),
    );
    await plugins.put(
      accountScope(tenantA),
      weatherTool({
        execution: { method: 'GET', base_url: 'http://127.0.0.1:1/a-weather', param_placement: 'query' },
      }),
    );
    await credentials.put(tenantA, USER, 'MODEL_KEY', 'tenant-a-model-key');
    await credentials.put(tenantA, USER, 'WEATHER_TOKEN', 'tenant-a-weather');

    // Acme's task gets the shared agent, untouched by tenant A.
    const acmeTask = receivedTask('company_research');
    await submit(acmeTask);
    const { task: acmes } = await assembledFor(acmeTask);
    expect(acmes.runtime_config.model.base_url).not.toContain('tenant-a');
    expect(acmes.runtime_config.tools.map((tool) => tool.name)).toEqual(['search_company_basic']);

    // Tenant A's task gets tenant A's agent and tool.
    const aTask = receivedTask('company_research', { accountId: tenantA });
    await submit(aTask);
    const { task: as } = await assembledFor(aTask);
    expect(as.runtime_config.model.base_url).toBe('http://127.0.0.1:1/tenant-a');
    const tool = as.runtime_config.tools[0];
    expect(tool?.type === 'HTTP' && tool.execution.url).toBe('http://127.0.0.1:1/a-weather');
  });

  it('a received task naming another account than its subject is dropped: nothing is assembled or written for either account', async () => {
    const forged = receivedTask('company_research', { accountId: 'victim_acct' });
    await js.publish(taskReceivedSubject('attacker_acct'), encodeJson(forged), {
      msgID: `forged-${forged.task_meta.trace_id}`,
    });
    await assemblerIdle();
    expect(assembledMessages(forged)).toEqual([]);
    expect(seen.filter((message) => message.subject.startsWith('mesh.tasks.assembled.'))).not.toContainEqual(
      expect.objectContaining({ data: expect.stringContaining(forged.task_meta.trace_id) }),
    );
    expect(seen.filter((message) => message.subject.includes(forged.task_meta.trace_id))).toEqual([]);
  });

  it('a received task delivered twice is assembled twice but stored once for the executors', async () => {
    const task = receivedTask('company_research', { accountId: 'acct_redelivery' });
    await credentials.put('acct_redelivery', USER, 'QCC_KEY', CANARY.QCC_KEY);
    await credentials.put('acct_redelivery', USER, 'QCC_SECRET', CANARY.QCC_SECRET);
    await credentials.put('acct_redelivery', USER, 'MODEL_KEY', CANARY.MODEL_KEY);
    await submit(task);
    await assembledFor(task);
    // The same task again under another message id: what a redelivery after a lost ack looks like.
    await js.publish(taskReceivedSubject('acct_redelivery'), encodeJson(task), {
      msgID: `${task.task_meta.trace_id}:again`,
    });

    await waitFor(() => assembledMessages(task).length === 2, { timeoutMs: 15_000 });
    await assemblerIdle();
    const subject = taskAssembledSubject('acct_redelivery');
    const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
    expect(info.state.subjects?.[subject]).toBe(1);
    expect(logLines.some((line) => line.includes('"duplicate":true'))).toBe(true);
  });

  it('a message that is not a received task is logged without its payload, dropped, and the next task is still assembled', async () => {
    const payloadMarker = 'payload-marker-4e1f77';
    await js.publish(
      taskReceivedSubject(ACCOUNT),
      encodeJson({ task_meta: { workflow_id: 'company_research' }, secret_note: payloadMarker }),
    );
    const next = receivedTask('company_research');
    await submit(next);

    await assembledFor(next);
    const dropped = await waitFor(() =>
      logLines.find((line) => line.includes('received task is invalid; dropped')),
    );
    expect(dropped).toContain('task_meta.trace_id');
    expect(logLines.join('\n')).not.toContain(payloadMarker);
    await assemblerIdle();
  });

  it('no canary credential value appeared in any message on any subject, in any stored message, or in any log line', async () => {
    const canaries = Object.values(CANARY);
    expect(seen.length).toBeGreaterThan(0);
    for (const message of seen) {
      for (const canary of canaries) {
        expect(message.data, message.subject).not.toContain(canary);
        expect(message.headers, message.subject).not.toContain(canary);
      }
    }
    let stored = 0;
    for await (const stream of jsm.streams.list()) {
      const { first_seq: first, last_seq: last } = stream.state;
      for (let seq = first; seq > 0 && seq <= last; seq++) {
        const message = await jsm.streams.getMessage(stream.config.name, { seq }).catch(() => null);
        if (!message) continue;
        stored++;
        const text = `${new TextDecoder().decode(message.data)}\n${headerText(message.header)}`;
        for (const canary of canaries) expect(text, `${stream.config.name}#${seq}`).not.toContain(canary);
      }
    }
    expect(stored).toBeGreaterThan(0);
    const logs = logLines.join('\n');
    expect(logs).toContain('task assembled');
    for (const canary of canaries) expect(logs).not.toContain(canary);
  });
});
