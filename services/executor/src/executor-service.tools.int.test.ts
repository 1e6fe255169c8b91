// The executor's native, dynamic and script tools end to end: an in-process executor on real NATS, a scripted
// model, a recall stand-in answering on `mesh.recall.actions`, a recording server standing in for the tool
// box proxy, and real scripts in a temporary scripts directory.
import { followTaskEvents, openMeshBuckets, ToolStore, SHARED_CATALOGUE } from '@agentmesh/bus';
import {
  Buckets,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  NativeProviderAnnouncement,
  newTraceId,
  taskAssembledSubject,
  type AssembledTask,
  type NativeTool,
  type ScriptTool,
  type TaskEvent,
  type ToolDefinition,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startNats,
  startRecallStandIn,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type ModelStep,
  type NatsServer,
  type RecallStandIn,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { userText, toolResultsSoFar, offeredTools } from './__fixtures__/model-requests.js';
import { z } from 'zod';
import { appendixDynamicTool, recallAnswer } from './__fixtures__/recall-answers.js';
import {
  createScriptWorkspace,
  shoutTool,
  wordCountTool,
  type ScriptWorkspace,
} from './__fixtures__/script-workspace.js';
import { assembledTask } from './__fixtures__/tasks.js';
import { ExecuteScriptInput, nativeToolProviders, RecallActionsInput } from './tools/native/index.js';

const ACCOUNT = 'acme';
const EXECUTOR_ID = 'exec-tools-1';
const PROXY_PATH = '/api/agent-operator-integration/internal-v1/tool-box/box-1/proxy/tool-1';
const TOOL_BOX_TOKEN = 'canary-toolbox-token-71c2e9';
const vaultKeys = generateVaultKeyPair('exec-tools-test');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let proxy: RecordingApi;
let recall: RecallStandIn;
let workspace: ScriptWorkspace;
let executor: RunningService;
/** Per user message: how the model answers that task. */
const behaviours = new Map<string, (request: ChatCompletionRequest) => ModelStep>();

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  workspace = await createScriptWorkspace();
  model = await startScriptedModel({
    respond: (request) => {
      const behaviour = behaviours.get(userText(request));
      if (behaviour === undefined) throw new Error(`no behaviour for ${userText(request)}`);
      return behaviour(request);
    },
  });
  proxy = await startRecordingApi({
    routes: [{ method: 'POST', path: PROXY_PATH, reply: { body: { entries: [{ id: 'disease_000001' }] } } }],
  });
  recall = await startRecallStandIn(client, () => {
    const tool = appendixDynamicTool(`${proxy.url}${PROXY_PATH}`);
    // A credential recall pinned for the tool box: it must reach the proxy and nothing else.
    const header = { ...tool.fixed_params?.header, Authorization: `Bearer ${TOOL_BOX_TOKEN}` };
    return { body: recallAnswer({ ...tool, fixed_params: { ...tool.fixed_params, header } }) };
  });

  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    env: {
      ACK_PROGRESS_MS: '400',
      LLM_MAX_RETRIES: '0',
      EXECUTOR_ID,
      SCRIPTS_DIR: workspace.scriptsDir,
      SCRIPTS_CACHE_DIR: workspace.cacheDir,
      SCRIPT_REQUIRE_ISOLATION: 'false',
      SCRIPT_CAPABILITIES: 'python3,ffmpeg',
    },
  });
});

afterAll(async () => {
  await executor?.stop();
  await recall?.stop();
  await client?.drain();
  await Promise.all([model?.stop(), proxy?.stop(), workspace?.remove()]);
  await nats?.stop();
});

/** A native tool's definition as this file's executor announces it in mesh_native_providers. */
async function announcedTool(name: string): Promise<NativeTool | undefined> {
  const providers = await new Kvm(js).open(Buckets.NATIVE_PROVIDERS);
  for await (const key of await providers.keys()) {
    const announcement = NativeProviderAnnouncement.parse((await providers.get(key))?.json());
    const tool = announcement.tools.find((candidate) => candidate.name === name);
    if (tool !== undefined) return tool;
  }
  return undefined;
}

async function registry(): Promise<ToolStore> {
  return new ToolStore((await openMeshBuckets(js)).tools);
}

async function runTask(user: string, tools: ToolDefinition[], accountType?: string): Promise<TaskEvent[]> {
  const traceId = newTraceId();
  const task: AssembledTask = assembledTask({
    traceId,
    accountId: ACCOUNT,
    ...(accountType === undefined ? {} : { accountType }),
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key' },
    sealFor: vaultKeys,
    userMessage: user,
    tools,
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId,
    signal: AbortSignal.timeout(30_000),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

const toolEvents = (events: TaskEvent[]) =>
  events.filter((event) => event.type === 'tool_start' || event.type === 'tool_result');

describe('native tools of a running executor', () => {
  it('on start, each native tool is announced as a NATIVE tool whose JSON Schema is what its zod schema generates, and the registry is not written', async () => {
    const recallTool = await announcedTool('recall_actions');
    const scriptTool = await announcedTool('execute_script');

    expect(recallTool).toMatchObject({ type: 'NATIVE', class_name: 'RecallActionsTool' });
    expect(recallTool?.parameters).toEqual(
      z.toJSONSchema(RecallActionsInput, { target: 'draft-2020-12', io: 'input' }),
    );
    expect(scriptTool).toMatchObject({ type: 'NATIVE', class_name: 'ExecuteScriptTool' });
    expect(scriptTool?.parameters).toEqual(
      z.toJSONSchema(ExecuteScriptInput, { target: 'draft-2020-12', io: 'input' }),
    );
    // Mirroring into mesh_tools is the assembler's job: executors may not write the registry.
    expect(await (await registry()).get(SHARED_CATALOGUE, 'recall_actions')).toBeUndefined();
  });

  it('the executor announces the classes it provides in mesh_native_providers', async () => {
    const providers = await new Kvm(js).open(Buckets.NATIVE_PROVIDERS);
    expect(await nativeToolProviders(providers, 'RecallActionsTool')).toEqual([EXECUTOR_ID]);
    expect(await nativeToolProviders(providers, 'ExecuteScriptTool')).toEqual([EXECUTOR_ID]);
    expect(await nativeToolProviders(providers, 'DeepSearchTool')).toEqual([]);
  });

  it('a task binding a NATIVE tool no executor provides: the model gets the unavailable tool error and the task goes on to done', async () => {
    const deepSearch: NativeTool = {
      type: 'NATIVE',
      name: 'deep_search',
      description: 'searches deeply',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      class_name: 'DeepSearchTool',
    };
    behaviours.set('search deeply', (request) =>
      toolResultsSoFar(request) === 0
        ? { toolCalls: [{ id: 'call_ds', name: 'deep_search', arguments: { query: 'agentmesh' } }] }
        : { content: 'Deep search is not available here.' },
    );
    const events = await runTask('search deeply', [deepSearch]);

    expect(toolEvents(events).map((event) => event.data)).toEqual([
      { call_id: 'call_ds', tool: 'deep_search', arguments: { query: 'agentmesh' } },
      expect.objectContaining({
        call_id: 'call_ds',
        ok: false,
        error: {
          code: 'NOT_FOUND',
          message:
            'native tool deep_search is unavailable (no running executor provides it); answer without it',
          detail: { class_name: 'DeepSearchTool' },
        },
      }),
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'Deep search is not available here.' },
    });
  });
});

describe('dynamic tools end to end (seed 004)', () => {
  it('the model calls recall_actions, receives a dynamic tool and calls it: the proxy gets the merged arguments in the right places, events show both calls, the task is done', async () => {
    const recallBinding = await announcedTool('recall_actions');
    expect(recallBinding).toBeDefined();
    const seenTools: string[][] = [];
    behaviours.set('plan a treatment for disease_000001', (request) => {
      seenTools.push(offeredTools(request));
      switch (toolResultsSoFar(request)) {
        case 0:
          return {
            toolCalls: [
              {
                id: 'call_recall',
                name: 'recall_actions',
                arguments: {
                  kn_id: 'kn_medical',
                  at_id: 'generate_treatment_plan',
                  unique_identity: { disease_id: 'disease_000001' },
                },
              },
            ],
          };
        case 1:
          return {
            toolCalls: [
              {
                id: 'call_query',
                name: 'query_object_instances',
                arguments: {
                  kn_id: 'kn_medical',
                  ot_id: 'disease',
                  limit: 5,
                  condition: { field: 'disease_id', operation: '==', value: 'disease_000001' },
                },
              },
            ],
          };
        default:
          return { content: 'Treatment plan drafted for disease_000001.' };
      }
    });
    const events = await runTask('plan a treatment for disease_000001', [recallBinding!], 'user');

    // The recall service was asked with the task's account.
    expect(recall.requests.at(-1)).toMatchObject({
      body: { kn_id: 'kn_medical', at_id: 'generate_treatment_plan' },
      headers: { 'x-account-id': ACCOUNT, 'x-account-type': 'user' },
    });
    // The model saw the dynamic tool from its second step on.
    expect(seenTools).toEqual([
      ['recall_actions'],
      ['recall_actions', 'query_object_instances'],
      ['recall_actions', 'query_object_instances'],
    ]);
    // The proxy got one POST: fixed headers (override included), the model's body fields, path parameters
    // in the query (api_url has no placeholders for them).
    const [request] = await proxy.waitForRequests(1);
    expect(request).toMatchObject({ method: 'POST', path: PROXY_PATH });
    expect(request!.headers).toMatchObject({
      'x-http-method-override': 'GET',
      'x-account-id': 'test',
      'x-account-type': 'user',
      authorization: `Bearer ${TOOL_BOX_TOKEN}`,
      'content-type': 'application/json',
    });
    expect(request!.body).toEqual({
      limit: 5,
      condition: { field: 'disease_id', operation: '==', value: 'disease_000001' },
    });
    expect(request!.query).toEqual({ kn_id: 'kn_medical', ot_id: 'disease' });

    expect(toolEvents(events).map((event) => [event.type, event.data])).toEqual([
      ['tool_start', expect.objectContaining({ call_id: 'call_recall', tool: 'recall_actions' })],
      [
        'tool_result',
        expect.objectContaining({
          call_id: 'call_recall',
          ok: true,
          // The model and the events see the tool as it is called, not where it is sent or with what.
          result: {
            _dynamic_tools: [
              {
                name: 'query_object_instances',
                description: expect.any(String),
                parameters: expect.any(Object),
              },
            ],
          },
        }),
      ],
      [
        'tool_start',
        {
          call_id: 'call_query',
          tool: 'query_object_instances',
          arguments: expect.objectContaining({ kn_id: 'kn_medical', limit: 5 }),
        },
      ],
      [
        'tool_result',
        expect.objectContaining({
          call_id: 'call_query',
          ok: true,
          result: { entries: [{ id: 'disease_000001' }] },
        }),
      ],
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'Treatment plan drafted for disease_000001.', steps: 3 },
    });
    expect(JSON.stringify(events)).not.toContain(TOOL_BOX_TOKEN);
    const modelSaw = model.requests.filter((r) => userText(r) === 'plan a treatment for disease_000001');
    expect(JSON.stringify(modelSaw.map((r) => r.body))).not.toContain(TOOL_BOX_TOKEN);
  });
});

describe('script tools end to end (seed 003)', () => {
  it('the model calls a Python script tool and a Node script tool: the events show their inputs and outputs, the task is done', async () => {
    behaviours.set('count and shout', (request) =>
      toolResultsSoFar(request) === 0
        ? {
            toolCalls: [
              { id: 'call_py', name: 'text__word-count', arguments: { text: 'the quick brown fox' } },
              { id: 'call_js', name: 'text__shout', arguments: { text: 'quiet please' } },
            ],
          }
        : { content: 'Four words, and shouted.' },
    );
    const events = await runTask('count and shout', [wordCountTool(), shoutTool()]);

    const [firstStart, secondStart, ...results] = toolEvents(events);
    expect([firstStart, secondStart].map((event) => [event?.type, event?.data])).toEqual([
      [
        'tool_start',
        { call_id: 'call_py', tool: 'text__word-count', arguments: { text: 'the quick brown fox' } },
      ],
      ['tool_start', { call_id: 'call_js', tool: 'text__shout', arguments: { text: 'quiet please' } }],
    ]);
    // The two scripts run concurrently: their results arrive in either order.
    expect(results.map((event) => event.type)).toEqual(['tool_result', 'tool_result']);
    expect(results.map((event) => event.data)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ call_id: 'call_py', ok: true, result: { words: 4, language: 'python' } }),
        expect.objectContaining({
          call_id: 'call_js',
          ok: true,
          result: { shout: 'QUIET PLEASE', language: 'nodejs' },
        }),
      ]),
    );
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'Four words, and shouted.' } });
  });

  it('a script tool requiring a capability SCRIPT_CAPABILITIES lacks fails SERVICE_UNAVAILABLE; one whose capabilities are all provided runs', async () => {
    const withCapabilities = (tool: ScriptTool, capabilities: string[]): ScriptTool => ({
      ...tool,
      security_context: { ...tool.security_context, required_capabilities: capabilities },
    });
    behaviours.set('count on the gpu', (request) =>
      toolResultsSoFar(request) === 0
        ? {
            toolCalls: [
              { id: 'call_gpu', name: 'text__word-count', arguments: { text: 'a b' } },
              { id: 'call_ok', name: 'text__shout', arguments: { text: 'ok' } },
            ],
          }
        : { content: 'No GPU here.' },
    );
    const events = await runTask('count on the gpu', [
      withCapabilities(wordCountTool(), ['python3', 'gpu']),
      withCapabilities(shoutTool(), ['ffmpeg']),
    ]);

    const results = toolEvents(events).filter((event) => event.type === 'tool_result');
    expect(results.map((event) => event.data)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          call_id: 'call_gpu',
          ok: false,
          error: expect.objectContaining({
            code: 'SERVICE_UNAVAILABLE',
            detail: { tool_id: 'text:word-count', missing_capabilities: ['gpu'] },
          }),
        }),
        expect.objectContaining({
          call_id: 'call_ok',
          ok: true,
          result: { shout: 'OK', language: 'nodejs' },
        }),
      ]),
    );
    expect(events.at(-1)).toMatchObject({ type: 'done' });
  });

  it('the generic execute_script tool from the registry runs the script the model names', async () => {
    const binding = await announcedTool('execute_script');
    behaviours.set('run the counter', (request) =>
      toolResultsSoFar(request) === 0
        ? {
            toolCalls: [
              {
                id: 'call_exec',
                name: 'execute_script',
                arguments: { scriptPath: 'python/word_count.py', inputData: { text: 'one two three' } },
              },
            ],
          }
        : { content: 'Three.' },
    );
    const events = await runTask('run the counter', [binding!]);

    expect(toolEvents(events)[1]?.data).toMatchObject({
      call_id: 'call_exec',
      ok: true,
      result: { success: true, outputData: { words: 3, language: 'python' } },
    });
    expect(events.at(-1)).toMatchObject({ type: 'done' });
  });
});

describe('stopping', () => {
  it('a stopping executor withdraws its native tool announcements', async () => {
    const providers = await new Kvm(js).open(Buckets.NATIVE_PROVIDERS);
    await executor.stop();
    executor = { stop: async () => {} };
    await waitFor(async () => (await nativeToolProviders(providers, 'RecallActionsTool')).length === 0, {
      timeoutMs: 5_000,
      description: 'the announcements to be withdrawn',
    });
    expect(await nativeToolProviders(providers, 'ExecuteScriptTool')).toEqual([]);
  });
});
