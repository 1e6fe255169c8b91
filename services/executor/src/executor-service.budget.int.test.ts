/**
 * Budgets through a running executor on a real NATS server: a task's model calls are reported as
 * `step_finished` events, a token budget stops a task between model calls with BUDGET_EXCEEDED, `done`
 * reports the cost of a priced model, and each finished task's usage is added to its account's day.
 */
import { AccountUsageStore, followTaskEvents, openMeshBuckets } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  utcDay,
  type AssembledTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type ModelStep,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';

const MODEL_KEY = 'canary-model-key-b7d20e';
const SEARCH_KEY = 'canary-search-key-1a9c3f';
const vaultKeys = generateVaultKeyPair('exec-budget-1');
const PRICES = { 'scripted-model': { input_per_million_usd: 2, output_per_million_usd: 10 } };

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let api: RecordingApi;
const logLines: string[] = [];
const instances: { stop(): Promise<void> }[] = [];

/** Searches on every turn (never answering on its own) and reports 60 + 40 tokens a call. */
function searchForever(request: ChatCompletionRequest): ModelStep {
  const turn = request.body.messages.filter((m) => m.role === 'assistant').length + 1;
  return {
    toolCalls: [{ name: 'search', arguments: { q: `turn ${turn}` } }],
    usage: { prompt_tokens: 60, completion_tokens: 40 },
  };
}

function searchThenAnswer(request: ChatCompletionRequest): ModelStep {
  const searched = request.body.messages.some((m) => m.role === 'tool');
  return searched
    ? { content: 'found it', usage: { prompt_tokens: 1000, completion_tokens: 100 } }
    : {
        toolCalls: [{ name: 'search', arguments: { q: 'once' } }],
        usage: { prompt_tokens: 500, completion_tokens: 50 },
      };
}

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    respond: (request) => (userOf(request).startsWith('forever') ? searchForever : searchThenAnswer)(request),
  });
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/search', reply: (request) => ({ body: { hits: [request.query['q']] } }) },
    ],
  });
});

afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.stop()));
});

afterAll(async () => {
  await client?.drain();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
});

function userOf(request: { body: unknown }): string {
  const messages = (request.body as ChatCompletionRequest['body']).messages;
  return String(messages.find((m) => m.role === 'user')?.content ?? '');
}

async function startExecutor(env: Record<string, string> = {}): Promise<void> {
  instances.push(await startInProcessExecutor({ natsUrl: nats.url, vaultKeys, logLines, env }));
}

function newTask(account: string, user: string, budget?: { max_total_tokens?: number }): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: account,
    modelBaseUrl: model.baseUrl,
    secrets: { SEARCH_KEY, [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: user,
    tools: [searchTool(api.url)],
    maxSteps: 10,
    ...(budget === undefined ? {} : { budget }),
  });
}

async function run(task: AssembledTask): Promise<TaskEvent[]> {
  const account = task.task_meta.account_id;
  await js.publish(taskAssembledSubject(account), JSON.stringify(task));
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: account,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(20_000),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

/** The account's usage today once `tasks` tasks were added (the attempt adds after the terminal event). */
async function usageOnceAdded(account: string, tasks: number) {
  const store = new AccountUsageStore((await openMeshBuckets(js, { only: ['accountUsage'] })).accountUsage);
  return waitFor(
    async () => {
      const usage = await store.get(account, utcDay(new Date()));
      return usage.tasks >= tasks ? usage : undefined;
    },
    { timeoutMs: 10_000, description: `${tasks} tasks of ${account} added` },
  );
}

const modelCallsOf = (user: string) =>
  model.requests.filter((r) => r.outcome !== 'models' && userOf(r) === user);
const searchesOf = (prefix: string) => api.requests.filter((r) => String(r.query['q']).startsWith(prefix));

describe('budgets in the executor', () => {
  it('when a token budget of 150 is used up after step 2, the task ends BUDGET_EXCEEDED: both steps ran their tool, the model was not asked a third time', async () => {
    await startExecutor();
    const user = 'forever: token budget';
    const before = api.requests.length;
    const events = await run(newTask('acme', user, { max_total_tokens: 150 }));

    // Step 1 used 100 (< 150): the model is asked again. Step 2 brought it to 200 (≥ 150): not again.
    expect(modelCallsOf(user)).toHaveLength(2);
    expect(api.requests.length - before).toBe(2);
    expect(events.filter((e) => e.type === 'tool_result')).toHaveLength(2);
    const steps = events.flatMap((e) => (e.type === 'step_finished' ? [e.data] : []));
    expect(steps.map((s) => [s.step, s.total_usage.total_tokens])).toEqual([
      [1, 100],
      [2, 200],
    ]);
    // No price configured: no cost anywhere.
    expect(steps.every((s) => s.cost_usd === undefined && s.total_cost_usd === undefined)).toBe(true);
    const terminal = events.at(-1)!;
    expect(terminal.type).toBe('error');
    expect(terminal.data).toEqual({
      code: 'BUDGET_EXCEEDED',
      message:
        'the task used 200 tokens of its budget of 150 (max_total_tokens); the model was not asked again',
      retryable: false,
      detail: { used_tokens: 200, max_total_tokens: 150 },
    });
    // The step's usage is stored with the step's writes, before its tool_start.
    const types = events.map((e) => e.type);
    expect(types.indexOf('step_finished')).toBeLessThan(types.indexOf('tool_start'));
    expect(searchesOf('turn 3')).toHaveLength(0);
  });

  it("when MODEL_PRICES prices the model, done reports the task's cost and the account's day gets its tokens and cost", async () => {
    await startExecutor({ MODEL_PRICES: JSON.stringify(PRICES) });
    const account = 'priced';
    const events = await run(newTask(account, 'priced task'));

    const done = events.at(-1)!;
    expect(done.type).toBe('done');
    // 1500 prompt tokens at $2/M + 150 completion tokens at $10/M.
    expect(done.data).toMatchObject({
      usage: { prompt_tokens: 1500, completion_tokens: 150, total_tokens: 1650 },
      cost_usd: 0.0045,
    });
    const steps = events.flatMap((e) => (e.type === 'step_finished' ? [e.data] : []));
    expect(steps.map((s) => [s.cost_usd, s.total_cost_usd])).toEqual([
      [0.0015, 0.0015],
      [0.003, 0.0045],
    ]);
    expect(await usageOnceAdded(account, 1)).toMatchObject({
      account_id: account,
      total_tokens: 1650,
      cost_usd: 0.0045,
      tasks: 1,
    });

    await run(newTask(account, 'priced task'));
    expect(await usageOnceAdded(account, 2)).toMatchObject({ total_tokens: 3300, cost_usd: 0.009, tasks: 2 });
  });
});
