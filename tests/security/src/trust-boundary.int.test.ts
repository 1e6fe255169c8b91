/**
 * Issue 8, findings 3 and 12, end to end on infra/nats/accounts.conf: every service runs as a process
 * logged in as its own NATS user, tasks submitted over NATS (as the `acme` upstream) and over HTTP run
 * to `done` through the recall service and a dynamic tool, and then each thing a user must not do is
 * tried and shown refused by the server (a permission violation, never just a time-out).
 */
import {
  accountSubmitSubject,
  Buckets,
  ErrorBody,
  Streams,
  Subjects,
  SubmitTaskReply,
  taskEventsSubject,
  type TaskEvent,
} from '@agentmesh/protocol';
import { SseParser } from '@agentmesh/sse';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  permissionViolation,
  refusal,
  startSecureMesh,
  type Client,
  type MeshUser,
  type SecureMesh,
} from './secure-mesh.js';

const BOX = 'e59f35f8-65f3-46bb-b5f1-a428380b3edc';
const TOOL = '7acb8add-ecd0-45cf-bd4d-57674c3c69b0';
const OTHER_ACCOUNT = 'globex';

let mesh: SecureMesh;
let ontology: RecordingApi;
let toolbox: RecordingApi;
let proxy: RecordingApi;
let model: ScriptedModel;

/** The model recalls the object's actions, calls the recalled tool, then answers. */
function scriptedAgent(request: ChatCompletionRequest) {
  const system = request.body.messages.find((message) => message.role === 'system')?.content;
  if (system === 'DELEGATE' || system === 'HELPER') return delegation(request, system);
  const toolResults = request.body.messages.filter((message) => message.role === 'tool').length;
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
    return { toolCalls: [{ name: 'search_object_instance', arguments: { kn_id: 'kn_medical', limit: 3 } }] };
  }
  return { content: 'Found one instance.' };
}

/** An agent that asks another agent (its sub-agent `helper`), and the helper, which answers at once. */
function delegation(request: ChatCompletionRequest, agent: 'DELEGATE' | 'HELPER') {
  if (agent === 'HELPER') return { content: 'helped' };
  const answered = request.body.messages.some((message) => message.role === 'tool');
  return answered
    ? { content: 'the helper answered' }
    : { toolCalls: [{ name: 'agent_helper', arguments: { input: 'help me' } }] };
}

async function admin(method: string, path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${mesh.adminKey}`, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
}

async function sseEvents(traceId: string): Promise<TaskEvent[]> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}/events`, {
    headers: { authorization: `Bearer ${mesh.apiKey}`, accept: 'text/event-stream' },
  });
  if (response.status !== 200) throw new Error(`SSE → ${response.status} ${await response.text()}`);
  const parser = new SseParser();
  return [...parser.push(await response.text()), ...parser.end()].map(
    (message) => JSON.parse(message.data) as TaskEvent,
  );
}

const submission = {
  workflow_id: 'recall_agent',
  user_id: 'u1',
  messages: [{ role: 'user', content: 'treat it' }],
};

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
  model = await startScriptedModel({ respond: scriptedAgent });
  mesh = await startSecureMesh({
    recall: {
      ONTOLOGY_QUERY_URL: ontology.url,
      OPERATOR_INTEGRATION_URL: toolbox.url,
      API_URL_TEMPLATE: `${proxy.url}/proxy/{box_id}/{tool_id}`,
    },
  });
  await admin('PUT', `/accounts/${ACCOUNT}/users/u1/credentials/MODEL_KEY`, { value: 'model-key' });
  await admin('POST', '/agents', {
    workflow_id: 'recall_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: ['recall_actions'],
  });
  for (const [workflowId, prompt, subAgents] of [
    ['helper', 'HELPER', []],
    ['delegating_agent', 'DELEGATE', ['helper']],
  ] as const) {
    await admin('POST', '/agents', {
      workflow_id: workflowId,
      system_prompt: prompt,
      model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
      sub_agents: subAgents,
    });
  }
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await Promise.all([ontology?.stop(), toolbox?.stop(), proxy?.stop()]);
});

/** Subscribes and hands back what closed the subscription (a violation, for a refused subject). */
async function subscriptionRefusal(client: Client, subject: string) {
  const closed = await client.nc.subscribe(subject).closed;
  expect(closed).toMatchObject({ operation: 'subscription', subject });
  return closed;
}

async function expectPublishRefused(attempt: Promise<unknown>, subject: string | RegExp): Promise<void> {
  const violation = permissionViolation(await refusal(attempt));
  expect(violation, 'a permission violation from the server').toBeDefined();
  expect(violation!.operation).toBe('publish');
  if (typeof subject === 'string') expect(violation!.subject).toBe(subject);
  else expect(violation!.subject).toMatch(subject);
}

describe('the mesh on least-privilege NATS users', () => {
  it('before the provisioning, the gateway (which may not create streams) waited and named the fix; the provisioner then created everything', () => {
    const waiting = mesh.gatewayLogsBeforeProvisioning.find((line) =>
      String(line.msg).startsWith('waiting for'),
    );
    expect(waiting).toMatchObject({ level: 'warn', resource: 'stream', name: Streams.TASKS.name });
    expect(String(waiting?.msg)).toContain('provision');
    const done = mesh.provisioning.logs.find((line) => line.msg === 'mesh resources provisioned');
    expect(done?.created).toEqual(
      expect.arrayContaining([`stream ${Streams.TASKS.name}`, `bucket ${Buckets.AGENTS}`]),
    );
  });

  it('a task submitted over NATS by the acme upstream on its own subject runs to done; the acme tenant sees its events live', async () => {
    const tenant = await mesh.connectAs('tenant-acme');
    const live: TaskEvent[] = [];
    const events = tenant.nc.subscribe(`mesh.events.${ACCOUNT}.>`, {
      callback: (_error, msg) => void live.push(msg.json<TaskEvent>()),
    });
    await tenant.nc.flush();

    const upstream = await mesh.connectAs('upstream-acme');
    const reply = await upstream.nc.request(accountSubmitSubject(ACCOUNT), JSON.stringify(submission), {
      timeout: 10_000,
    });
    const accepted = SubmitTaskReply.parse(reply.json());
    expect(accepted.events_subject).toBe(taskEventsSubject(ACCOUNT, accepted.trace_id));

    const done = await waitFor(
      () => live.find((event) => event.trace_id === accepted.trace_id && event.type === 'done'),
      {
        timeoutMs: 60_000,
        description: 'the done event on the tenant subscription',
      },
    );
    expect(done.type).toBe('done');
    const starts = live
      .filter((event) => event.trace_id === accepted.trace_id && event.type === 'tool_start')
      .map((event) => (event.data as { tool: string }).tool);
    expect(starts).toEqual(['recall_actions', 'search_object_instance']);
    // What the tenant follows is what the stream stored and republished: seq 1..n, each once, in order.
    const seqs = live.filter((event) => event.trace_id === accepted.trace_id).map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_seq, i) => i + 1));
    expect(proxy.requests.length).toBeGreaterThan(0);
    events.unsubscribe();
    expect([...upstream.violations, ...tenant.violations]).toEqual([]);
  });

  it('a task submitted over HTTP with an API key runs to done, followed over SSE', async () => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(submission),
    });
    expect(response.status).toBe(202);
    const { trace_id } = (await response.json()) as { trace_id: string };
    const events = await sseEvents(trace_id);
    expect(events.at(-1)?.type).toBe('done');

    // The account's task list is read through a consumer on mesh_tasks, which the gateway's user may make.
    const listed = await fetch(`${mesh.gatewayUrl}/v1/tasks?limit=100`, {
      headers: { authorization: `Bearer ${mesh.apiKey}` },
    });
    expect(listed.status).toBe(200);
    const { tasks } = (await listed.json()) as { tasks: { trace_id: string }[] };
    expect(tasks.map((task) => task.trace_id)).toContain(trace_id);

    // Filtered: the task is found by its id and status, with the start of its message, and the executor's
    // duration and usage; another account (an admin key acting for it) finds nothing by the same filter.
    const filtered = async (headers: Record<string, string>, query: string) => {
      const response = await fetch(`${mesh.gatewayUrl}/v1/tasks?${query}`, { headers });
      return {
        status: response.status,
        body: (await response.json()) as { tasks: Record<string, unknown>[] },
      };
    };
    const own = await filtered({ authorization: `Bearer ${mesh.apiKey}` }, `q=${trace_id}&status=done`);
    expect(own.status).toBe(200);
    expect(own.body.tasks).toHaveLength(1);
    expect(own.body.tasks[0]).toMatchObject({
      trace_id,
      preview: expect.any(String),
      duration_ms: expect.any(Number),
      usage: { total_tokens: expect.any(Number) },
    });
    const other = await filtered(
      { authorization: `Bearer ${mesh.adminKey}`, 'x-account-id': OTHER_ACCOUNT },
      `q=${trace_id}`,
    );
    expect(other).toEqual({ status: 200, body: { tasks: [] } });
    expect((await filtered({ authorization: `Bearer ${mesh.apiKey}` }, 'status=finished')).status).toBe(400);
  });

  it("an account-wide model credential serves a user with none of their own, and an admin lists the accounts from the buckets' keys, as the gateway's and assembler's users may", async () => {
    await admin('PUT', `/accounts/${ACCOUNT}/credentials/MODEL_KEY`, { value: 'model-key' });
    const response = await fetch(`${mesh.gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...submission, user_id: 'user-without-own-keys' }),
    });
    expect(response.status).toBe(202);
    const { trace_id } = (await response.json()) as { trace_id: string };
    expect((await sseEvents(trace_id)).at(-1)?.type).toBe('done');

    const accounts = await fetch(`${mesh.gatewayUrl}/v1/admin/accounts`, {
      headers: { authorization: `Bearer ${mesh.adminKey}` },
    });
    expect(accounts.status).toBe(200);
    expect(((await accounts.json()) as { accounts: string[] }).accounts).toContain(ACCOUNT);
  });

  it('the trusted upstream submits for an account named in x-account-id on the bare subject', async () => {
    const trusted = await mesh.connectAs('trusted-upstream');
    const headers = natsHeaders();
    headers.set('x-account-id', ACCOUNT);
    const reply = await trusted.nc.request(Subjects.GATEWAY_SUBMIT, JSON.stringify(submission), {
      timeout: 10_000,
      headers,
    });
    expect(SubmitTaskReply.parse(reply.json()).events_subject).toContain(`mesh.events.${ACCOUNT}.`);
  });

  it("an agent calling an agent runs to done: the executor submits the sub-task on the gateway's trusted subject as its own user", async () => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...submission, workflow_id: 'delegating_agent' }),
    });
    const { trace_id } = (await response.json()) as { trace_id: string };
    const events = await sseEvents(trace_id);

    expect(events.find((event) => event.type === 'subtask_finished')).toMatchObject({
      data: { status: 'done' },
    });
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      data: { tool: 'agent_helper', ok: true, result: 'helped' },
    });
    expect(events.at(-1)?.type).toBe('done');
  });

  it('without an API key the gateway refuses HTTP callers (account headers are not trusted by default)', async () => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/admin/api-keys`, {
      method: 'POST',
      headers: { 'x-account-id': OTHER_ACCOUNT, 'content-type': 'application/json' },
      body: JSON.stringify({ account_id: OTHER_ACCOUNT }),
    });
    expect(response.status).toBe(401);
  });
});

describe('an upstream user', () => {
  it.each(['_INBOX.>', '_INBOX_gateway.>', '_INBOX_executor.>'])(
    'cannot subscribe to %s (other users’ replies: task input, vaults, status records)',
    async (subject) => {
      await subscriptionRefusal(await mesh.connectAs('upstream-acme'), subject);
    },
  );

  it('cannot subscribe to the events of another account, nor its own (no event access at all)', async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    await subscriptionRefusal(upstream, `mesh.events.${OTHER_ACCOUNT}.>`);
    await subscriptionRefusal(upstream, `mesh.events.${ACCOUNT}.>`);
    await subscriptionRefusal(upstream, `mesh.eventlog.${ACCOUNT}.>`);
  });

  it("cannot submit on another account's subject", async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    const subject = accountSubmitSubject(OTHER_ACCOUNT);
    await expectPublishRefused(
      upstream.nc.request(subject, JSON.stringify(submission), { timeout: 5_000 }),
      subject,
    );
  });

  it('cannot submit on the trusted subject, where x-account-id would pick the account', async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    const headers = natsHeaders();
    headers.set('x-account-id', OTHER_ACCOUNT);
    await expectPublishRefused(
      upstream.nc.request(Subjects.GATEWAY_SUBMIT, JSON.stringify(submission), { timeout: 5_000, headers }),
      Subjects.GATEWAY_SUBMIT,
    );
  });

  it('on its own subject, an x-account-id naming another account is FORBIDDEN by the gateway', async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    const headers = natsHeaders();
    headers.set('x-account-id', OTHER_ACCOUNT);
    const reply = await upstream.nc.request(accountSubmitSubject(ACCOUNT), JSON.stringify(submission), {
      timeout: 10_000,
      headers,
    });
    expect(ErrorBody.parse(reply.json()).code).toBe('FORBIDDEN');
  });

  it('cannot reach the JetStream API at all', async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    await expectPublishRefused(jetstreamManager(upstream.nc, { timeout: 5_000 }), '$JS.API.INFO');
  });

  it('with the default _INBOX prefix, it cannot even receive its replies', async () => {
    const upstream = await mesh.connectAs('upstream-acme', { inboxPrefix: '_INBOX' });
    const error = await refusal(upstream.nc.request(accountSubmitSubject(ACCOUNT), '{}', { timeout: 5_000 }));
    expect(permissionViolation(error)).toMatchObject({ operation: 'subscription' });
  });
});

describe('the executor and recall users', () => {
  const guarded = [Buckets.AGENTS, Buckets.TOOLS, Buckets.API_KEYS, Buckets.CREDENTIALS] as const;
  const cases = (['executor', 'recall'] as const).flatMap((user) =>
    guarded.map((bucket) => [user, bucket] as const),
  );

  it.each(cases)('%s cannot put or delete in %s', async (user, bucket) => {
    const client = await mesh.connectAs(user);
    const kv = await new Kvm(jetstream(client.nc)).open(bucket);
    await expectPublishRefused(kv.put('forged', '{"forged":true}'), `$KV.${bucket}.forged`);
    await expectPublishRefused(kv.delete('forged'), `$KV.${bucket}.forged`);
  });

  it.each(['executor', 'recall'] as const)(
    '%s cannot publish onto a followed events subject: only MESH_EVENTS republishes what it stored there',
    async (user) => {
      const client = await mesh.connectAs(user);
      const subject = `mesh.events.${ACCOUNT}.0af7651916cd43dd8448eb211c80319c`;
      client.nc.publish(subject, '{"type":"done"}');
      await waitFor(
        () => client.violations.find((error) => error.operation === 'publish' && error.subject === subject),
        { description: `a publish violation on ${subject}` },
      );
    },
  );

  it.each(['executor', 'recall'] as const)(
    '%s cannot create, update, purge or delete streams',
    async (user) => {
      const client = await mesh.connectAs(user);
      const jsm = await jetstreamManager(client.nc);
      await expectPublishRefused(
        jsm.streams.add({ name: 'EVIL', subjects: ['evil.>'] }),
        '$JS.API.STREAM.CREATE.EVIL',
      );
      await expectPublishRefused(
        jsm.streams.delete(Streams.TASKS.name),
        `$JS.API.STREAM.DELETE.${Streams.TASKS.name}`,
      );
      await expectPublishRefused(
        jsm.streams.purge(Streams.EVENTS.name),
        `$JS.API.STREAM.PURGE.${Streams.EVENTS.name}`,
      );
      await expectPublishRefused(
        jsm.streams.delete(`KV_${Buckets.AGENTS}`),
        `$JS.API.STREAM.DELETE.KV_${Buckets.AGENTS}`,
      );
      await expectPublishRefused(
        jsm.streams.purge(`KV_${Buckets.API_KEYS}`),
        `$JS.API.STREAM.PURGE.KV_${Buckets.API_KEYS}`,
      );
    },
  );

  it('the executor cannot update a stream it may read the settings of', async () => {
    const jsm = await jetstreamManager((await mesh.connectAs('executor')).nc);
    await expectPublishRefused(
      jsm.streams.update(Streams.TASKS.name, { max_msgs: 1 }),
      `$JS.API.STREAM.UPDATE.${Streams.TASKS.name}`,
    );
  });

  it('the executor cannot read agents or credentials', async () => {
    const jsm = await jetstreamManager((await mesh.connectAs('executor')).nc);
    for (const bucket of [Buckets.AGENTS, Buckets.CREDENTIALS]) {
      await expectPublishRefused(
        jsm.direct.getMessage(`KV_${bucket}`, { last_by_subj: `$KV.${bucket}.x` }),
        new RegExp(`^\\$JS\\.API\\.DIRECT\\.GET\\.KV_${bucket}\\.`),
      );
    }
  });

  it("the executor cannot read received tasks through a consumer of its own, nor delete the assembler's", async () => {
    const jsm = await jetstreamManager((await mesh.connectAs('executor')).nc);
    await expectPublishRefused(
      jsm.consumers.add(Streams.TASKS.name, {
        durable_name: 'spy',
        filter_subject: 'mesh.tasks.received.*',
        ack_policy: AckPolicy.Explicit,
      }),
      `$JS.API.CONSUMER.CREATE.${Streams.TASKS.name}.spy.mesh.tasks.received.*`,
    );
    await expectPublishRefused(
      jsm.consumers.add(Streams.TASKS.name, {
        durable_name: 'executor',
        filter_subject: 'mesh.tasks.received.*',
        ack_policy: AckPolicy.Explicit,
      }),
      `$JS.API.CONSUMER.CREATE.${Streams.TASKS.name}.executor.mesh.tasks.received.*`,
    );
    await expectPublishRefused(
      jsm.consumers.delete(Streams.TASKS.name, 'assembler'),
      `$JS.API.CONSUMER.DELETE.${Streams.TASKS.name}.assembler`,
    );
  });

  it("the executor reads its per-native-class consumers, but not the assembler's, though consumer names are allowed by wildcard", async () => {
    const client = await mesh.connectAs('executor');
    const jsm = await jetstreamManager(client.nc);
    // Created by the running executors under this user: the consumer of the tasks needing recall_actions.
    const routed = await jsm.consumers.info(Streams.TASKS.name, 'executor-RecallActionsTool');
    expect(routed.config.filter_subject).toBe('mesh.tasks.assembled.*.RecallActionsTool');
    await expectPublishRefused(
      jsm.consumers.info(Streams.TASKS.name, 'assembler'),
      `$JS.API.CONSUMER.INFO.${Streams.TASKS.name}.assembler`,
    );
    await expectPublishRefused(
      client.nc.request(`$JS.API.CONSUMER.MSG.NEXT.${Streams.TASKS.name}.assembler`, '{"batch":1}'),
      `$JS.API.CONSUMER.MSG.NEXT.${Streams.TASKS.name}.assembler`,
    );
  });

  it.each(['executor', 'recall'] as const)(
    '%s cannot subscribe to the gateway inbox or the ingress',
    async (user) => {
      const client = await mesh.connectAs(user);
      await subscriptionRefusal(client, '_INBOX_gateway.>');
      await subscriptionRefusal(client, '_INBOX.>');
      await subscriptionRefusal(client, Subjects.GATEWAY_SUBMIT);
    },
  );
});

describe('the assembler user', () => {
  it.each([Buckets.AGENTS, Buckets.API_KEYS, Buckets.CREDENTIALS])('cannot put in %s', async (bucket) => {
    const kv = await new Kvm(jetstream((await mesh.connectAs('assembler')).nc)).open(bucket);
    await expectPublishRefused(kv.put('forged', '{}'), `$KV.${bucket}.forged`);
  });
});

describe('a tenant user', () => {
  it("cannot subscribe to another account's events", async () => {
    await subscriptionRefusal(await mesh.connectAs('tenant-acme'), `mesh.events.${OTHER_ACCOUNT}.>`);
  });

  it('cannot subscribe to where its own events are published and stored (a refused publish shows there), only to where they are republished once stored', async () => {
    await subscriptionRefusal(await mesh.connectAs('tenant-acme'), `mesh.eventlog.${ACCOUNT}.>`);
  });

  it('cannot subscribe to other users’ replies', async () => {
    await subscriptionRefusal(await mesh.connectAs('tenant-acme'), '_INBOX.>');
  });

  it('cannot read any stream through the JetStream API (replay is over SSE)', async () => {
    const tenant = await mesh.connectAs('tenant-acme');
    // No inbox to receive an answer in...
    expect(permissionViolation(await refusal(jetstreamManager(tenant.nc, { timeout: 5_000 })))).toMatchObject(
      {
        operation: 'subscription',
      },
    );
    // ...and no JetStream API subject to ask on.
    const subject = `$JS.API.CONSUMER.CREATE.${Streams.EVENTS.name}.spy.mesh.eventlog.${OTHER_ACCOUNT}.>`;
    tenant.nc.publish(subject, '{}');
    await waitFor(
      () => tenant.violations.find((error) => error.operation === 'publish' && error.subject === subject),
      {
        description: `a publish violation on ${subject}`,
      },
    );
  });

  it.each(['mesh.events', 'mesh.eventlog'])(
    'cannot publish events on %s, even for its own account',
    async (prefix) => {
      const tenant = await mesh.connectAs('tenant-acme');
      const subject = `${prefix}.${ACCOUNT}.0af7651916cd43dd8448eb211c80319c`;
      tenant.nc.publish(subject, '{"type":"done"}');
      const violation = await waitFor(
        () => tenant.violations.find((error) => error.operation === 'publish' && error.subject === subject),
        { description: `a publish violation on ${subject}` },
      );
      expect(violation.subject).toBe(subject);
    },
  );
});

describe('the provisioner user', () => {
  it('creates but cannot delete or purge streams, nor read a bucket', async () => {
    const jsm = await jetstreamManager((await mesh.connectAs('provisioner')).nc);
    await expectPublishRefused(
      jsm.streams.delete(Streams.EVENTS.name),
      `$JS.API.STREAM.DELETE.${Streams.EVENTS.name}`,
    );
    await expectPublishRefused(
      jsm.streams.purge(`KV_${Buckets.CREDENTIALS}`),
      `$JS.API.STREAM.PURGE.KV_${Buckets.CREDENTIALS}`,
    );
    await expectPublishRefused(
      jsm.direct.getMessage(`KV_${Buckets.CREDENTIALS}`, { last_by_subj: `$KV.${Buckets.CREDENTIALS}.x` }),
      new RegExp(`^\\$JS\\.API\\.DIRECT\\.GET\\.KV_${Buckets.CREDENTIALS}\\.`),
    );
  });
});

describe('scheduled runs (/v1/schedules)', () => {
  const schedules = async (key: string, method: string, path = '', body?: unknown) => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/schedules${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: response.status,
      body: (await response.json().catch(() => undefined)) as Record<string, unknown>,
    };
  };
  const schedule = (extra: Record<string, unknown> = {}) => ({
    cron: '0 8 * * 1-5',
    timezone: 'Europe/Berlin',
    workflow_id: 'recall_agent',
    input: { user_id: 'u1', messages: [{ role: 'user', content: 'report' }] },
    paused: true,
    ...extra,
  });

  it("another account's API key can neither see, pause, resume, run nor delete an account's schedule", async () => {
    const registered = await fetch(`${mesh.gatewayUrl}/v1/admin/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account_id: OTHER_ACCOUNT }),
    });
    const otherKey = ((await registered.json()) as { api_key: string }).api_key;
    const created = await schedules(mesh.apiKey, 'POST', '', schedule());
    expect(created.status).toBe(201);
    const id = created.body.schedule_id as string;

    for (const [method, path] of [
      ['GET', `/${id}`],
      ['POST', `/${id}/pause`],
      ['POST', `/${id}/resume`],
      ['POST', `/${id}/run`],
      ['DELETE', `/${id}`],
    ] as const) {
      expect((await schedules(otherKey, method, path)).status, `${method} ${path}`).toBe(404);
    }
    expect((await schedules(otherKey, 'GET')).body.schedules).toEqual([]);
    const mine = await schedules(mesh.apiKey, 'GET', `/${id}`);
    expect(mine.status).toBe(200);
    expect(mine.body.last_runs).toEqual([]);
    expect((await schedules(mesh.apiKey, 'DELETE', `/${id}`)).status).toBe(204);
  });

  it.each([
    ['an invalid cron expression', schedule({ cron: '0 25 * * *' }), 400],
    ['an unknown time zone', schedule({ timezone: 'Europe/Atlantis' }), 400],
    [
      'an interval of zero',
      { ...schedule({ interval_seconds: 0 }), cron: undefined, timezone: undefined },
      400,
    ],
    ['an unknown agent', schedule({ workflow_id: 'no_such_agent' }), 404],
  ])('a schedule with %s is refused with a clear 4xx', async (_what, body, status) => {
    const answer = await schedules(mesh.apiKey, 'POST', '', JSON.parse(JSON.stringify(body)));
    expect(answer.status).toBe(status);
    expect(answer.body).toMatchObject({ code: status === 400 ? 'INVALID_REQUEST' : 'NOT_FOUND' });
  });

  it('the executor cannot read the schedule buckets', async () => {
    const jsm = await jetstreamManager((await mesh.connectAs('executor')).nc);
    for (const bucket of [Buckets.SCHEDULES, Buckets.SCHEDULE_FIRINGS]) {
      await expectPublishRefused(
        jsm.direct.getMessage(`KV_${bucket}`, { last_by_subj: `$KV.${bucket}.x` }),
        new RegExp(`^\\$JS\\.API\\.DIRECT\\.GET\\.KV_${bucket}\\.`),
      );
    }
  });
});

describe('the services', () => {
  it.each(['gateway', 'assembler', 'executor', 'recall'] as const)(
    '%s ran the whole test without a permission violation in its log',
    (service: Extract<MeshUser, 'gateway' | 'assembler' | 'executor' | 'recall'>) => {
      const refused = mesh.services[service].logs.filter((line) => line.msg === 'NATS refused an operation');
      // The one expected: the gateway tried to create the first stream before the provisioning, then waited.
      const expected =
        service === 'gateway'
          ? [{ operation: 'publish', subject: `$JS.API.STREAM.CREATE.${Streams.TASKS.name}` }]
          : [];
      expect(refused.map(({ operation, subject }) => ({ operation, subject }))).toEqual(expected);
    },
  );
});

describe('threads of another account', () => {
  const SECRET = 'private-thread';
  let otherKey: string;
  let acmeTrace: string;

  async function as(
    key: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const response = await fetch(`${mesh.gatewayUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>),
    };
  }

  beforeAll(async () => {
    const created = await fetch(`${mesh.gatewayUrl}/v1/admin/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account_id: OTHER_ACCOUNT }),
    });
    otherKey = ((await created.json()) as { api_key: string }).api_key;
    expect(
      (await as(mesh.apiKey, 'POST', '/v1/threads', { thread_id: SECRET, metadata: { who: 'acme' } })).status,
    ).toBe(201);
    const run = await as(mesh.apiKey, 'POST', '/v1/tasks', {
      workflow_id: 'helper',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'acme private words' }],
      thread_id: SECRET,
    });
    expect(run.status, JSON.stringify(run.body)).toBe(202);
    acmeTrace = run.body!.trace_id as string;
    expect((await sseEvents(acmeTrace)).at(-1)?.type).toBe('done');
  });

  it('another account can neither read, list, delete, follow nor run in it (404, as for a thread that does not exist)', async () => {
    for (const [method, path] of [
      ['GET', `/v1/threads/${SECRET}`],
      ['DELETE', `/v1/threads/${SECRET}`],
      ['GET', `/v1/threads/${SECRET}/events`],
    ] as const) {
      const answer = await as(otherKey, method, path);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(answer.body)).not.toContain('acme');
    }
    const list = await as(otherKey, 'GET', '/v1/threads');
    expect(list.status).toBe(200);
    expect(list.body!.threads).toEqual([]);
    const run = await as(otherKey, 'POST', '/v1/tasks', {
      workflow_id: 'helper',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'let me in' }],
      thread_id: SECRET,
    });
    expect(run.status).toBe(404);
    expect(run.body).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('thread') });
    // An admin acting for the other account is that account here too.
    const asAdmin = await as(mesh.adminKey, 'GET', `/v1/threads/${SECRET}`, undefined, {
      'x-account-id': OTHER_ACCOUNT,
    });
    expect(asAdmin.status).toBe(404);

    // Its own thread of the same id is another thread; acme's is untouched.
    expect((await as(otherKey, 'POST', '/v1/threads', { thread_id: SECRET })).status).toBe(201);
    const mine = await as(otherKey, 'GET', `/v1/threads/${SECRET}`);
    expect(mine.body).toMatchObject({ entries: [], messages: [], metadata: {} });
    const acme = await as(mesh.apiKey, 'GET', `/v1/threads/${SECRET}`);
    expect(acme.body).toMatchObject({ metadata: { who: 'acme' }, runs: [acmeTrace] });
    expect(JSON.stringify(acme.body)).toContain('acme private words');
  });

  it("the acme upstream reads its own thread over NATS, and may not even ask on another account's threads subject", async () => {
    const upstream = await mesh.connectAs('upstream-acme');
    const own = await upstream.nc.request(
      `mesh.gateway.threads.${ACCOUNT}`,
      JSON.stringify({ op: 'get', thread_id: SECRET }),
      { timeout: 10_000 },
    );
    expect(own.json()).toMatchObject({ thread_id: SECRET, runs: [acmeTrace] });
    const subject = `mesh.gateway.threads.${OTHER_ACCOUNT}`;
    await expectPublishRefused(
      upstream.nc.request(subject, JSON.stringify({ op: 'get', thread_id: SECRET }), { timeout: 5_000 }),
      subject,
    );
  });

  it('bad input is a clear 4xx, over HTTP and over NATS', async () => {
    expect((await as(mesh.apiKey, 'POST', '/v1/threads', { thread_id: 'a.b' })).status).toBe(400);
    expect((await as(mesh.apiKey, 'POST', '/v1/threads', { bogus: 1 })).status).toBe(400);
    expect((await as(mesh.apiKey, 'POST', '/v1/threads', { thread_id: SECRET })).status).toBe(409);
    expect((await as(mesh.apiKey, 'GET', '/v1/threads/not.an.id')).status).toBe(400);
    expect((await as(mesh.apiKey, 'GET', '/v1/threads?limit=0')).status).toBe(400);
    const strategy = await as(mesh.apiKey, 'POST', '/v1/tasks', {
      workflow_id: 'helper',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'x' }],
      thread_id: SECRET,
      thread_strategy: 'shout',
    });
    expect(strategy.status).toBe(400);
    expect(
      (await as(mesh.apiKey, 'GET', `/v1/threads/${SECRET}/events`, undefined, { 'last-event-id': 'x' }))
        .status,
    ).toBe(400);
    const upstream = await mesh.connectAs('upstream-acme');
    for (const body of ['not json', JSON.stringify({ op: 'drop_table' })]) {
      const answer = await upstream.nc.request(`mesh.gateway.threads.${ACCOUNT}`, body, { timeout: 10_000 });
      expect(ErrorBody.parse(answer.json())).toMatchObject({ code: 'INVALID_REQUEST' });
    }
  });
});
