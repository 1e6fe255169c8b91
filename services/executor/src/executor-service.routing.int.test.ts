// Two in-process executors on real NATS with different native tools: one with a scripts directory
// (`execute_script`), one without. Tasks are published as the assembler publishes them, on the subject
// naming the native classes their tools need; each must reach an executor that has those classes, while
// tasks needing none still spread over both.
import { followTaskEvents } from '@agentmesh/bus';
import {
  Buckets,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  nativeClassesOf,
  NativeProviderAnnouncement,
  newTraceId,
  taskAssembledSubject,
  type NativeTool,
  type TaskEvent,
  type ToolDefinition,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startScriptedModel,
  type ChatCompletionRequest,
  type ModelStep,
  type NatsServer,
  type ScriptedModel,
  startNats,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { userText, toolResultsSoFar } from './__fixtures__/model-requests.js';
import { createScriptWorkspace, type ScriptWorkspace } from './__fixtures__/script-workspace.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('exec-routing-test');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let workspace: ScriptWorkspace;
let withScripts: RunningService;
let withoutScripts: RunningService;
/** Per user message: how the model answers that task. */
const behaviours = new Map<string, (request: ChatCompletionRequest) => ModelStep | Promise<ModelStep>>();

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
  // One task at a time each: two tasks running at once are running on both executors.
  const common = { ACK_PROGRESS_MS: '400', LLM_MAX_RETRIES: '0', MAX_CONCURRENT_TASKS: '1' };
  withScripts = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    env: {
      ...common,
      EXECUTOR_ID: 'exec-with-scripts',
      SCRIPTS_DIR: workspace.scriptsDir,
      SCRIPTS_CACHE_DIR: workspace.cacheDir,
      SCRIPT_REQUIRE_ISOLATION: 'false',
    },
  });
  withoutScripts = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    env: { ...common, EXECUTOR_ID: 'exec-without-scripts' },
  });
});

afterAll(async () => {
  await withoutScripts?.stop();
  await withScripts?.stop();
  await client?.drain();
  await Promise.all([model?.stop(), workspace?.remove()]);
  await nats?.stop();
});

/** `execute_script` as the executor with a scripts directory announces it. */
async function executeScriptTool(): Promise<NativeTool> {
  const providers = await new Kvm(js).open(Buckets.NATIVE_PROVIDERS);
  for await (const key of await providers.keys('ExecuteScriptTool.*')) {
    const announcement = NativeProviderAnnouncement.parse((await providers.get(key))?.json());
    const tool = announcement.tools.find((candidate) => candidate.name === 'execute_script');
    if (tool !== undefined) return tool;
  }
  throw new Error('execute_script is not announced');
}

/** Publishes the task as the assembler does (subject naming its native classes) and reads it to its end. */
async function runTask(user: string, tools: ToolDefinition[]): Promise<TaskEvent[]> {
  const traceId = newTraceId();
  const task = assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key' },
    sealFor: vaultKeys,
    userMessage: user,
    tools,
  });
  await js.publish(taskAssembledSubject(ACCOUNT, nativeClassesOf(tools)), JSON.stringify(task), {
    msgID: `${ACCOUNT}.${traceId}:assembled`,
  });
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

describe('routing tasks to executors that have their native tools', () => {
  it('every one of several tasks needing execute_script runs on the executor with a scripts directory: the script answers each time, never NOT_FOUND', async () => {
    const tool = await executeScriptTool();
    const texts = ['one', 'one two', 'one two three', 'a b c d', 'a b c d e', 'a b c d e f'];
    for (const text of texts) {
      behaviours.set(`count: ${text}`, (request) =>
        toolResultsSoFar(request) === 0
          ? {
              toolCalls: [
                {
                  id: 'call_count',
                  name: 'execute_script',
                  arguments: { scriptPath: 'python/word_count.py', inputData: { text } },
                },
              ],
            }
          : { content: 'Counted.' },
      );
    }

    const runs = await Promise.all(texts.map((text) => runTask(`count: ${text}`, [tool])));

    const results = runs.map((events) => events.find((event) => event.type === 'tool_result')?.data);
    expect(results).toEqual(
      texts.map((text) =>
        expect.objectContaining({
          call_id: 'call_count',
          ok: true,
          result: expect.objectContaining({
            success: true,
            outputData: expect.objectContaining({ words: text.split(' ').length }),
          }),
        }),
      ),
    );
    expect(runs.map((events) => events.at(-1)?.type)).toEqual(texts.map(() => 'done'));
  });

  it('tasks needing no native tool still run on both executors: two of them run at once with one slot each', async () => {
    // The first model call waits for a second one to arrive while it is still open.
    let arrived = 0;
    let bothArrived!: () => void;
    const barrier = new Promise<void>((resolve) => (bothArrived = resolve));
    const together = async (): Promise<ModelStep> => {
      if (++arrived === 2) bothArrived();
      const timedOut = await Promise.race([
        barrier.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 15_000).unref()),
      ]);
      return { content: timedOut ? 'alone' : 'together' };
    };
    behaviours.set('plain one', together);
    behaviours.set('plain two', together);

    const runs = await Promise.all([runTask('plain one', []), runTask('plain two', [])]);

    expect(runs.map((events) => events.at(-1))).toEqual([
      expect.objectContaining({ type: 'done', data: expect.objectContaining({ message: 'together' }) }),
      expect.objectContaining({ type: 'done', data: expect.objectContaining({ message: 'together' }) }),
    ]);
  });
});
