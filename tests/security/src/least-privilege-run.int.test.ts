/**
 * Issue 21, item 13: the least-privilege users of infra/nats/accounts.conf cover every call the services
 * make. The whole mesh runs on them (each service its own NATS user) while every door and feature is
 * used once, cheaply — tasks with tools over HTTP and over NATS, SSE and the account's live tail, the
 * OpenAI façade, /mcp, recall, approvals (approved, and cancelled while waiting), the cancel of a running
 * task, sub-agents, the management API, dead letters, the task list, the queue-depth metric scraped
 * from the gateway's /metrics, a schedule fired by the loop and run now —; then the services stop gracefully and nats-server's own log must hold
 * no "Permissions Violation" line. Unlike trust-boundary.int.test.ts, nothing here is meant to be refused:
 * every line the server logs is a grant the config lacks.
 */
import {
  accountSubmitSubject,
  DeadLetter,
  deadLetterSubject,
  SubmitTaskReply,
  threadApiSubject,
  type TaskEvent,
} from '@agentmesh/protocol';
import { SseParser } from '@agentmesh/sse';
import {
  findFreePort,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type ModelStep,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, startSecureMesh, type SecureMesh } from './secure-mesh.js';

const BOX = 'e59f35f8-65f3-46bb-b5f1-a428380b3edc';
const TOOL = '7acb8add-ecd0-45cf-bd4d-57674c3c69b0';
/** nats-server logs a refusal as "Publish Violation" / "Subscription Violation" (clients see "Permissions Violation"). */
const VIOLATION = /(Permissions|Publish|Subscription) Violation/i;

let mesh: SecureMesh;
let ontology: RecordingApi;
let toolbox: RecordingApi;
let proxy: RecordingApi;
let payments: RecordingApi;
let hooks: RecordingApi;
let model: ScriptedModel;
let metricsPort: number;
/** nats-server's log, read once the services have stopped. */
let serverLog: string[] = [];

/** The model's part, chosen by each agent's system prompt. */
function respond(request: ChatCompletionRequest): ModelStep {
  const messages = request.body.messages;
  const system = messages.find((message) => message.role === 'system')?.content;
  const toolResults = messages.filter((message) => message.role === 'tool').length;
  switch (system) {
    case 'HANG':
      return { fault: 'hang' };
    case 'PLAIN':
      return { content: 'plain answer' };
    case 'HELPER':
      return { content: 'helped' };
    case 'DELEGATE':
      return toolResults === 0
        ? { toolCalls: [{ name: 'agent_helper', arguments: { input: 'help me' } }] }
        : { content: 'the helper answered' };
    case 'PAY':
      return toolResults === 0
        ? { toolCalls: [{ name: 'pay', arguments: { amount: 5000 } }] }
        : { content: 'paid' };
    default:
      // The recall agent: recall the object's actions, call the recalled tool, answer.
      if (toolResults === 0) {
        return {
          toolCalls: [
            {
              name: 'recall_actions',
              arguments: {
                kn_id: 'kn_medical',
                at_id: 'generate_treatment_plan',
                unique_identity: { disease_id: 'disease_000001' },
              },
            },
          ],
        };
      }
      if (toolResults === 1) {
        return {
          toolCalls: [{ name: 'search_object_instance', arguments: { kn_id: 'kn_medical', limit: 3 } }],
        };
      }
      return { content: 'Found one instance.' };
  }
}

async function call(
  method: string,
  path: string,
  options: { body?: unknown; key?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(`${mesh.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${options.key ?? mesh.apiKey}`,
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

async function ok(response: Promise<Response>): Promise<Response> {
  const answer = await response;
  if (!answer.ok) throw new Error(`${answer.url} → ${answer.status} ${await answer.text()}`);
  return answer;
}

const admin = (method: string, path: string, body?: unknown) =>
  ok(call(method, `/v1/admin${path}`, { key: mesh.adminKey, body }));

async function submit(workflowId: string): Promise<string> {
  const response = await ok(
    call('POST', '/v1/tasks', {
      body: { workflow_id: workflowId, user_id: 'u1', messages: [{ role: 'user', content: 'go' }] },
    }),
  );
  return ((await response.json()) as { trace_id: string }).trace_id;
}

/** A finished task's events over SSE (the stream ends after the terminal event). */
async function sseEvents(traceId: string): Promise<TaskEvent[]> {
  const response = await ok(
    call('GET', `/v1/tasks/${traceId}/events`, { headers: { accept: 'text/event-stream' } }),
  );
  const parser = new SseParser();
  return [...parser.push(await response.text()), ...parser.end()].map(
    (message) => JSON.parse(message.data) as TaskEvent,
  );
}

async function status(traceId: string): Promise<string> {
  const response = await ok(call('GET', `/v1/tasks/${traceId}`));
  return ((await response.json()) as { status: string }).status;
}

/** One JSON-RPC call on /mcp; the answer may come as JSON or as one SSE message. */
async function mcp(
  session: string | undefined,
  body: Record<string, unknown>,
): Promise<{ session: string | undefined; result: unknown }> {
  const response = await ok(
    call('POST', '/mcp', {
      body: { jsonrpc: '2.0', ...body },
      headers: {
        accept: 'application/json, text/event-stream',
        ...(session ? { 'mcp-session-id': session } : {}),
      },
    }),
  );
  const text = await response.text();
  const next = response.headers.get('mcp-session-id') ?? session;
  if (!('id' in body)) return { session: next, result: undefined };
  const json = response.headers.get('content-type')?.startsWith('text/event-stream')
    ? new SseParser()
        .push(`${text}\n\n`)
        .map((message) => JSON.parse(message.data) as { id?: unknown; result?: unknown })
        .find((message) => message.id === body.id)
    : (JSON.parse(text) as { result?: unknown });
  return { session: next, result: json?.result };
}

async function scrapeGateway(): Promise<string> {
  return (await ok(fetch(`http://127.0.0.1:${metricsPort}/metrics`))).text();
}

beforeAll(async () => {
  ontology = await startRecordingApi({
    routes: [
      {
        method: 'POST',
        path: '/api/ontology-query/v1/knowledge-networks/:kn_id/action-types/:at_id',
        reply: {
          status: 200,
          body: {
            actions: [
              {
                parameters: { 'x-account-type': 'user', limit: 5 },
                dynamic_params: { limit: null, kn_id: null },
              },
            ],
            action_source: { type: 'tool', box_id: BOX, tool_id: TOOL },
          },
        },
      },
    ],
  });
  toolbox = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/api/agent-operator-integration/internal-v1/tool-box/:box/tool/:tool',
        reply: {
          status: 200,
          body: {
            name: 'search_object_instance',
            description: 'Queries object instances of one object type.',
            api_spec: {
              parameters: [
                { name: 'x-account-type', in: 'header', required: true, schema: { type: 'string' } },
                { name: 'kn_id', in: 'path', required: true, schema: { type: 'string' } },
              ],
              request_body: {
                content: {
                  'application/json': {
                    schema: { type: 'object', properties: { limit: { type: 'integer' } } },
                  },
                },
              },
            },
          },
        },
      },
    ],
  });
  proxy = await startRecordingApi({
    routes: [{ method: 'POST', path: '/proxy/:box/:tool', reply: { status: 200, body: { instances: [] } } }],
  });
  payments = await startRecordingApi({
    routes: [{ method: 'GET', path: '/pay', reply: { status: 200, body: { paid: true } } }],
  });
  hooks = await startRecordingApi({ routes: [{ method: 'POST', path: '/hook', reply: { status: 204 } }] });
  model = await startScriptedModel({ respond });
  metricsPort = await findFreePort();
  mesh = await startSecureMesh({
    keepNatsLog: true,
    provisionFirst: true,
    recall: {
      ONTOLOGY_QUERY_URL: ontology.url,
      OPERATOR_INTEGRATION_URL: toolbox.url,
      API_URL_TEMPLATE: `${proxy.url}/proxy/{box_id}/{tool_id}`,
    },
    // Limits and caps on, and periodic work made frequent, so their calls happen within the run too.
    env: {
      gateway: {
        METRICS_PORT: String(metricsPort),
        QUEUE_DEPTH_MAX_AGE_MS: '1000',
        SCHEDULE_TICK_MS: '200',
        MAX_RUNNING_TASKS_PER_ACCOUNT: '100',
        MAX_RUNNING_TASKS_PER_API_KEY: '100',
        RUNNING_TASKS_RECHECK_MS: '200',
        SUBMIT_RATE_PER_ACCOUNT: '1000',
        ACCOUNT_DAILY_TOKEN_CAP: '100000000',
        ACCOUNT_USAGE_CACHE_MS: '0',
        WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      },
      executor: { NATIVE_PROVIDER_TTL_MS: '1500' },
    },
  });

  const modelOf = { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' };
  // u1 submits over HTTP and NATS; the OpenAI façade and /mcp submit as `default` and `mcp`.
  for (const user of ['u1', 'default', 'mcp']) {
    await admin('PUT', `/accounts/${ACCOUNT}/users/${user}/credentials/MODEL_KEY`, { value: 'model-key' });
  }
  await admin('POST', '/plugins', {
    schema_version: 'v1',
    name: 'pay',
    description: 'pays an amount',
    parameters: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    execution: { method: 'GET', base_url: `${payments.url}/pay`, param_placement: 'query' },
  });
  const agents: Array<Record<string, unknown>> = [
    { workflow_id: 'recall_agent', tools: ['recall_actions'] },
    {
      workflow_id: 'plain_agent',
      system_prompt: 'PLAIN',
      // A model list with shared key limits: the executor's grants on mesh_model_limits are exercised.
      model: [{ ...modelOf, limits: { max_concurrent: 4, rpm: 1000, tpm: 1_000_000 } }, modelOf],
    },
    { workflow_id: 'hanging_agent', system_prompt: 'HANG' },
    { workflow_id: 'helper', system_prompt: 'HELPER' },
    { workflow_id: 'delegating_agent', system_prompt: 'DELEGATE', sub_agents: ['helper'] },
    { workflow_id: 'paying_agent', system_prompt: 'PAY', tools: ['pay'], tool_approvals: { pay: {} } },
    {
      workflow_id: 'impatient_agent',
      system_prompt: 'PAY',
      tools: ['pay'],
      tool_approvals: { pay: { timeout_ms: 1000 } },
    },
  ];
  for (const agent of agents) await admin('POST', '/agents', { model: modelOf, ...agent });
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await Promise.all([ontology?.stop(), toolbox?.stop(), proxy?.stop(), payments?.stop(), hooks?.stop()]);
});

describe('the whole mesh on the least-privilege users of accounts.conf', () => {
  it('the management API answers: agents, tools, credentials, API keys, MCP servers, dead letters', async () => {
    await admin('GET', '/agents');
    await admin('GET', '/agents/recall_agent');
    await admin('GET', '/plugins');
    await admin('GET', `/accounts/${ACCOUNT}/users/u1/credentials`);
    await admin('PUT', '/mcp-servers/docs', {
      transport: { type: 'streamable-http', url: 'https://mcp.example.com/mcp' },
    });
    await admin('GET', '/mcp-servers');
    await admin('DELETE', '/mcp-servers/docs');
    const key = (await (await admin('POST', '/api-keys', { account_id: ACCOUNT })).json()) as {
      api_key: string;
    };
    await admin('POST', '/api-keys/revoke', { api_key: key.api_key });
    const letters = (await (await admin('GET', '/dead-letters')).json()) as { dead_letters: unknown[] };
    expect(letters.dead_letters).toEqual([]);
    await ok(call('GET', '/v1/agents'));
  });

  it('a task with tools (recall, a recalled tool) runs to done over HTTP, followed over SSE and on the account tail', async () => {
    const tail = new AbortController();
    const tailResponse = await ok(
      call('GET', '/v1/events', { headers: { accept: 'text/event-stream' }, signal: tail.signal }),
    );
    const seen: TaskEvent[] = [];
    const reading = (async () => {
      const parser = new SseParser();
      const decoder = new TextDecoder();
      for await (const chunk of tailResponse.body!) {
        for (const message of parser.push(decoder.decode(chunk as Uint8Array, { stream: true }))) {
          if (message.data) seen.push(JSON.parse(message.data) as TaskEvent);
        }
      }
    })().catch(() => undefined);

    const traceId = await submit('recall_agent');
    const events = await sseEvents(traceId);
    expect(events.at(-1)?.type).toBe('done');
    expect(
      events
        .filter((event) => event.type === 'tool_start')
        .map((event) => (event.data as { tool: string }).tool),
    ).toEqual(['recall_actions', 'search_object_instance']);
    await waitFor(() => seen.find((event) => event.trace_id === traceId && event.type === 'done'), {
      timeoutMs: 30_000,
      description: 'the done event on the account tail',
    });
    tail.abort();
    await reading;

    const list = (await (await ok(call('GET', '/v1/tasks?limit=50'))).json()) as {
      tasks: { trace_id: string }[];
    };
    expect(list.tasks.map((task) => task.trace_id)).toContain(traceId);
  });

  it('a task submitted over NATS by the acme upstream runs to done; an agent calling an agent too', async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    const reply = await upstream.nc.request(
      accountSubmitSubject(ACCOUNT),
      JSON.stringify({
        workflow_id: 'plain_agent',
        user_id: 'u1',
        messages: [{ role: 'user', content: 'hi' }],
      }),
      { timeout: 10_000 },
    );
    const accepted = SubmitTaskReply.parse(reply.json());
    expect((await sseEvents(accepted.trace_id)).at(-1)?.type).toBe('done');

    const delegated = await sseEvents(await submit('delegating_agent'));
    expect(delegated.find((event) => event.type === 'subtask_finished')).toMatchObject({
      data: { status: 'done' },
    });
    expect(delegated.at(-1)?.type).toBe('done');
  });

  it('the OpenAI façade and /mcp run an agent', async () => {
    const completion = await ok(
      call('POST', '/v1/chat/completions', {
        body: { model: 'plain_agent', messages: [{ role: 'user', content: 'hi' }] },
      }),
    );
    expect(JSON.stringify(await completion.json())).toContain('plain answer');
    await ok(call('GET', '/v1/models'));

    const init = await mcp(undefined, {
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
    });
    await mcp(init.session, { method: 'notifications/initialized' });
    const tools = await mcp(init.session, { id: 2, method: 'tools/list', params: {} });
    expect(JSON.stringify(tools.result)).toContain('run_plain_agent');
    const ran = await mcp(init.session, {
      id: 3,
      method: 'tools/call',
      params: { name: 'run_plain_agent', arguments: { message: 'hi' } },
    });
    expect(JSON.stringify(ran.result)).toContain('plain answer');
  });

  it('the recall HTTP form answers through the recall service', async () => {
    const response = await ok(
      call(
        'POST',
        '/api/action-recall/v1/knowledge-networks/kn_medical/action-types/generate_treatment_plan/recall',
        {
          body: { unique_identity: { disease_id: 'disease_000001' } },
          headers: { 'x-account-id': ACCOUNT, 'x-account-type': 'user' },
        },
      ),
    );
    expect(JSON.stringify(await response.json())).toContain('search_object_instance');
  });

  it('a call that needs approval parks the task; approved, it runs to done; another, cancelled while waiting, ends CANCELLED', async () => {
    const approved = await submit('paying_agent');
    await waitFor(async () => (await status(approved)) === 'waiting_approval', {
      timeoutMs: 30_000,
      description: 'status waiting_approval',
    });
    const pending = (await (await ok(call('GET', `/v1/tasks/${approved}/approvals`))).json()) as {
      approvals: { call_id: string }[];
    };
    const callId = pending.approvals[0]!.call_id;
    await ok(call('POST', `/v1/tasks/${approved}/approvals/${callId}`, { body: { approve: true } }));
    expect((await sseEvents(approved)).at(-1)?.type).toBe('done');
    expect(payments.requests).toHaveLength(1);

    const cancelled = await submit('paying_agent');
    await waitFor(async () => (await status(cancelled)) === 'waiting_approval', {
      timeoutMs: 30_000,
      description: 'status waiting_approval',
    });
    await ok(call('POST', `/v1/tasks/${cancelled}/cancel`));
    expect((await sseEvents(cancelled)).at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
  });

  it('an approval nobody gives expires, and its task ends APPROVAL_TIMEOUT', async () => {
    const traceId = await submit('impatient_agent');
    expect((await sseEvents(traceId)).at(-1)).toMatchObject({
      type: 'error',
      data: { code: 'APPROVAL_TIMEOUT' },
    });
  });

  it('a running task is cancelled', async () => {
    const before = model.requests.length;
    const traceId = await submit('hanging_agent');
    await waitFor(() => model.requests.length > before, {
      timeoutMs: 30_000,
      description: 'the model asked',
    });
    await ok(call('POST', `/v1/tasks/${traceId}/cancel`));
    expect((await sseEvents(traceId)).at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
  });

  it('a schedule made with the account key fires from the loop and runs now to done; paused, resumed, shown, deleted', async () => {
    const created = (await (
      await ok(
        call('POST', '/v1/schedules', {
          body: {
            interval_seconds: 1,
            workflow_id: 'plain_agent',
            input: { user_id: 'u1', messages: [{ role: 'user', content: 'scheduled' }] },
          },
        }),
      )
    ).json()) as { schedule_id: string };
    const path = `/v1/schedules/${created.schedule_id}`;
    type Shown = { last_runs: Array<{ kind: string; state: string; trace_id?: string }> };
    const show = async () => (await (await ok(call('GET', path))).json()) as Shown;
    await waitFor(async () => (await show()).last_runs.some((run) => run.state === 'submitted'), {
      timeoutMs: 30_000,
      description: 'the firing loop submitted a scheduled task',
    });
    await ok(call('POST', `${path}/pause`));
    const ran = (await (
      await ok(call('POST', `${path}/run`, { body: { idempotency_key: 'lp-1' } }))
    ).json()) as {
      trace_id: string;
    };
    expect((await sseEvents(ran.trace_id)).at(-1)).toMatchObject({ type: 'done' });
    await ok(call('POST', `${path}/resume`));
    await ok(call('GET', '/v1/schedules'));
    await ok(call('DELETE', path));
  });

  it('a thread: created over NATS by the acme upstream, a run interrupted by a queued one (the executor starts it), compacted, followed, listed and deleted', async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    const created = await upstream.nc.request(
      threadApiSubject(ACCOUNT),
      JSON.stringify({
        op: 'create',
        body: { thread_id: 'lp-thread', strategy: 'enqueue', compaction: { max_history_tokens: 1 } },
      }),
      { timeout: 10_000 },
    );
    expect(created.json()).toMatchObject({ thread_id: 'lp-thread', status: 'idle' });
    const say = async (workflowId: string): Promise<string> => {
      const response = await ok(
        call('POST', '/v1/tasks', {
          body: {
            workflow_id: workflowId,
            user_id: 'u1',
            messages: [{ role: 'user', content: 'go' }],
            thread_id: 'lp-thread',
          },
        }),
      );
      return ((await response.json()) as { trace_id: string }).trace_id;
    };
    const first = await say('plain_agent');
    expect((await sseEvents(first)).at(-1)?.type).toBe('done');
    // A hanging run, then a queued one: cancelling the first, its executor frees the thread and queues the next.
    const before = model.requests.length;
    const hanging = await say('hanging_agent');
    await waitFor(() => model.requests.length > before, {
      timeoutMs: 30_000,
      description: 'the model asked',
    });
    const queued = await say('plain_agent');
    await ok(call('POST', `/v1/tasks/${hanging}/cancel`));
    expect((await sseEvents(queued)).at(-1)?.type).toBe('done');
    const thread = (await (await ok(call('GET', '/v1/threads/lp-thread'))).json()) as {
      runs: string[];
      entries: { entry: { type: string; trace_id?: string } }[];
    };
    expect(thread.runs).toEqual([first, hanging, queued]);
    // The assembler compacted (a cut) before each later run, and the done runs appended their turns.
    expect(thread.entries.filter(({ entry }) => entry.type === 'compaction').length).toBeGreaterThan(0);
    expect(thread.entries.flatMap(({ entry }) => (entry.type === 'turn' ? [entry.trace_id] : []))).toEqual([
      first,
      queued,
    ]);
    const followed = await call('GET', '/v1/threads/lp-thread/events', {
      headers: { accept: 'text/event-stream' },
    });
    const reader = followed.body!.getReader();
    const parser = new SseParser();
    const seen = new Set<string>();
    while (!seen.has(queued)) {
      const { value } = await reader.read();
      for (const message of parser.push(new TextDecoder().decode(value))) {
        const event = JSON.parse(message.data) as TaskEvent;
        if (event.type === 'done') seen.add(event.trace_id);
      }
    }
    await reader.cancel();
    expect(seen).toEqual(new Set([first, queued]));
    const listed = (await (await ok(call('GET', '/v1/threads'))).json()) as {
      threads: { thread_id: string }[];
    };
    expect(listed.threads.map((t) => t.thread_id)).toContain('lp-thread');
    await ok(call('DELETE', '/v1/threads/lp-thread'));
    expect((await call('GET', '/v1/threads/lp-thread')).status).toBe(404);
  });

  it('a dead letter (stored as the executor stores one) is listed, shown, re-driven to done and dropped', async () => {
    const traceId = randomBytes(16).toString('hex');
    const letter = DeadLetter.parse({
      trace_id: traceId,
      account_id: ACCOUNT,
      workflow_id: 'plain_agent',
      user_id: 'u1',
      reason: { code: 'MAX_DELIVER_EXCEEDED', message: 'out of attempts' },
      attempts: 3,
      dead_at: new Date().toISOString(),
      source: 'executor',
      consumer: 'executor',
      input: { messages: [{ role: 'user', content: 'again' }] },
    });
    const executor = await mesh.connectAs('executor');
    await jetstream(executor.nc).publish(deadLetterSubject(ACCOUNT, traceId), JSON.stringify(letter));

    const listed = (await (await admin('GET', '/dead-letters')).json()) as {
      dead_letters: { trace_id: string }[];
    };
    expect(listed.dead_letters.map((entry) => entry.trace_id)).toEqual([traceId]);
    await admin('GET', `/dead-letters/${traceId}`);
    const redriven = (await (await admin('POST', `/dead-letters/${traceId}/redrive`)).json()) as {
      trace_id: string;
    };
    expect((await sseEvents(redriven.trace_id)).at(-1)?.type).toBe('done');
    await admin('DELETE', `/dead-letters/${traceId}`);
    const after = (await (await admin('GET', '/dead-letters')).json()) as { dead_letters: unknown[] };
    expect(after.dead_letters).toEqual([]);
  });

  it("a webhook endpoint registered through the management API gets the task.completed of the account's next task, signed; its dead letters list", async () => {
    const asAcme = { key: mesh.adminKey, headers: { 'x-account-id': ACCOUNT } };
    await ok(call('POST', '/v1/admin/webhooks', { ...asAcme, body: { url: `${hooks.url}/hook` } }));
    await ok(call('GET', '/v1/admin/webhooks', asAcme));
    const traceId = await submit('recall_agent');
    const [delivery] = await waitFor(
      () => {
        const found = hooks.requests.filter((request) => JSON.stringify(request.body).includes(traceId));
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 30_000, description: 'the webhook delivery' },
    );
    expect(delivery!.headers['webhook-id']).toMatch(/^msg_/);
    expect(delivery!.headers['webhook-signature']).toMatch(/^v1,/);
    expect(delivery!.body).toMatchObject({ type: 'task.completed', data: { trace_id: traceId } });
    await ok(call('GET', '/v1/admin/webhooks/dead-letters', asAcme));
  });

  it("the gateway's /metrics shows the queue depth of both stages", async () => {
    const text = await scrapeGateway();
    expect(text).toMatch(/^agentmesh_task_queue_depth\{[^}]*stage="received"[^}]*\} 0$/m);
    expect(text).toMatch(/^agentmesh_task_queue_depth\{[^}]*stage="assembled"[^}]*\} 0$/m);
  });

  it('after all of it and a graceful stop, nats-server logged no permission violation', async () => {
    const codes = await Promise.all(Object.values(mesh.services).map((service) => service.stop('SIGTERM')));
    expect(codes).toEqual([0, 0, 0, 0]);
    serverLog = mesh.nats.log();
    expect(serverLog.some((line) => line.includes('Server is ready'))).toBe(true);
    const violations = serverLog.filter((line) => VIOLATION.test(line));
    expect(violations, `nats-server refused these calls:\n${violations.join('\n')}`).toEqual([]);
    // The services' side of the same: a refusal reported on their status stream or in an error they logged.
    const refusedInServices = Object.values(mesh.services)
      .flatMap((service) => service.logs)
      .filter((line) => line.msg === 'NATS refused an operation' || VIOLATION.test(JSON.stringify(line)));
    expect(refusedInServices).toEqual([]);
  });
});
