import {
  AssembledTask,
  ErrorBody,
  MODEL_API_KEY_VAULT_ENTRY,
  ReceivedTask,
  Streams,
  Subjects,
  SubmitTaskReply,
  taskReceivedSubject,
} from '@agentmesh/protocol';
import { decodeJson } from '@agentmesh/bus';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { openTaskVault, VaultTamperedError } from '@agentmesh/vault';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  seedFixture,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const VAULT_CANARY = `canary-vault-${crypto.randomUUID()}`;
const MODEL_KEY_CANARY = `canary-model-${crypto.randomUUID()}`;
const CANARIES = [VAULT_CANARY, MODEL_KEY_CANARY];

const seed001 = seedFixture('001-s2-payload.json');

/** Seed 001's example payload with canary secrets in its vault and model key. */
function payload(meta: Record<string, unknown> = {}) {
  return {
    ...seed001,
    task_meta: { ...seed001.task_meta, trace_id: crypto.randomUUID(), ...meta },
    runtime_config: {
      ...seed001.runtime_config,
      model: { ...seed001.runtime_config.model, api_key: MODEL_KEY_CANARY },
      vault: { QCC_KEY: VAULT_CANARY, FEISHU_TOKEN: 't-12345678' },
    },
  };
}

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;
/** Every message on every subject during the whole file: subject, headers and payload as text. */
const everything: string[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  client.subscribe('>', {
    callback: (_error, msg) => {
      const headerText = msg.headers
        ? [...msg.headers].map(([k, v]) => `${k}: ${v.join(',')}`).join('\n')
        : '';
      everything.push(`${msg.subject}\n${headerText}\n${new TextDecoder().decode(msg.data)}`);
    },
  });
  await client.flush();
  gw = await startTestGateway(nats.url, { TRUST_ACCOUNT_HEADERS: 'true' });
  await putSharedAgents(nats.url, 'w');
  jsm = await jetstreamManager(client);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

async function storedTask(account: string): Promise<ReceivedTask> {
  const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
    last_by_subj: taskReceivedSubject(account),
  });
  return decodeJson(ReceivedTask, stored!.data, 'test');
}

describe('pre-assembled submissions (seed 001, RuoYi mode)', () => {
  it('from a trusted caller, the task is stored with canonical tools, no model key, and a sealed vault that opens with the executors key', async () => {
    const body = payload();
    const res = await call(gw.url, 'POST', '/v1/run_workflow', {
      body,
      headers: { 'x-account-id': 'ruoyi' },
    });
    expect(res.status).toBe(202);
    const traceId = SubmitTaskReply.parse(res.body).trace_id;
    expect(traceId).toBe(body.task_meta.trace_id.replaceAll('-', ''));

    const task = await storedTask('ruoyi');
    expect(task.task_meta).toMatchObject({ trace_id: traceId, account_id: 'ruoyi', user_id: '10086' });
    const runtime = task.runtime_config!;
    expect(runtime.model).toEqual({
      provider: 'openai',
      model_name: 'deepseek-chat',
      base_url: 'http://one-api:3000/v1',
      temperature: 0.7,
      tool_protocol: 'native',
    });
    expect(runtime.tools.map((tool) => [tool.type, tool.name])).toEqual([
      ['NATIVE', 'deep_search'],
      ['HTTP', 'qichacha'],
    ]);
    const keyring = new Map([[gw.vaultKeys.kid, gw.vaultKeys.privateKey]]);
    // What the assembler passes on to the executors: the task as stored, limits included.
    const { idempotency_key: _key, ...stored } = task;
    const assembled = AssembledTask.parse(stored);
    expect(openTaskVault(assembled, keyring)).toEqual({
      QCC_KEY: VAULT_CANARY,
      FEISHU_TOKEN: 't-12345678',
      [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY_CANARY,
    });
    // Bound to the whole task: another trace, another account or another model endpoint opens nothing.
    for (const retargeted of [
      { ...assembled, task_meta: { ...assembled.task_meta, trace_id: 'f'.repeat(32) } },
      { ...assembled, task_meta: { ...assembled.task_meta, account_id: 'globex' } },
      {
        ...assembled,
        runtime_config: {
          ...assembled.runtime_config,
          model: { ...assembled.runtime_config.model, base_url: 'http://127.0.0.1:1/v1' },
        },
      },
    ]) {
      expect(() => openTaskVault(retargeted, keyring)).toThrow(VaultTamperedError);
    }
  });

  it('over NATS a pre-assembled payload is refused with FORBIDDEN, because its clear vault must not cross the bus', async () => {
    // No secrets in it: sending one in clear over NATS is exactly what is refused.
    const body = {
      ...payload({ account_id: 'ruoyi-nats' }),
      runtime_config: {
        ...seed001.runtime_config,
        model: { ...seed001.runtime_config.model, api_key: undefined },
        vault: {},
      },
    };
    const reply = await client.request(Subjects.GATEWAY_SUBMIT, JSON.stringify(body), { timeout: 5_000 });
    expect(ErrorBody.parse(reply.json())).toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringContaining('HTTP'),
    });
    const subject = taskReceivedSubject('ruoyi-nats');
    const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
    expect(info.state.subjects?.[subject] ?? 0).toBe(0);
  });

  it('an invalid pre-assembled payload is a 400 naming the path, and its secrets are not in the answer', async () => {
    const body = payload();
    body.runtime_config.tools = [
      seed001.runtime_config.tools[0],
      {
        ...seed001.runtime_config.tools[1],
        execution_config: { url: 'http://api.qcc.com/x', method: 'FETCH' },
      },
    ];
    const res = await call(gw.url, 'POST', '/v1/tasks', { body, headers: { 'x-account-id': 'ruoyi' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('INVALID_REQUEST');
    expect(res.body.message).toContain('runtime_config.tools[1].execution_config.method');
    for (const canary of CANARIES) expect(res.text).not.toContain(canary);
  });

  it('task_meta.account_id naming another account than x-account-id is 403, and a missing account is 400', async () => {
    const mismatch = await call(gw.url, 'POST', '/v1/tasks', {
      body: payload({ account_id: 'someone-else' }),
      headers: { 'x-account-id': 'ruoyi' },
    });
    expect(mismatch.status).toBe(403);
    expect(mismatch.body.code).toBe('FORBIDDEN');
    const noAccount = await call(gw.url, 'POST', '/v1/tasks', { body: payload() });
    expect(noAccount.status).toBe(400);
    expect(noAccount.body.message).toContain('account');
  });
});

describe('trusted account headers', () => {
  it('a plain submission with only x-account-id/x-account-type is accepted for that account; without x-account-id it is 401', async () => {
    const body = { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] };
    const res = await call(gw.url, 'POST', '/v1/tasks', {
      body,
      headers: { 'x-account-id': 'internal', 'x-account-type': 'service' },
    });
    expect(res.status).toBe(202);
    expect((await storedTask('internal')).task_meta).toMatchObject({
      account_id: 'internal',
      account_type: 'service',
    });
    const anonymous = await call(gw.url, 'POST', '/v1/tasks', { body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.code).toBe('UNAUTHORIZED');
  });

  it('over NATS, headers name the account of a plain submission', async () => {
    const headers = natsHeaders();
    headers.set('x-account-id', 'nats-acct');
    const reply = await client.request(
      Subjects.GATEWAY_SUBMIT,
      JSON.stringify({ workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] }),
      { timeout: 5_000, headers },
    );
    const { trace_id: traceId } = SubmitTaskReply.parse(reply.json());
    expect((await storedTask('nats-acct')).task_meta.trace_id).toBe(traceId);
  });
});

describe('secrecy', () => {
  it('no canary secret appears in any message on any subject, in any JetStream-stored task, or in any log line', async () => {
    await client.flush();
    expect(everything.some((text) => text.includes(taskReceivedSubject('ruoyi')))).toBe(true);
    expect(gw.logs.some((line) => line.includes('task accepted'))).toBe(true);
    const info = await jsm.streams.info(Streams.TASKS.name);
    expect(info.state.messages).toBeGreaterThan(0);
    const stored: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const message = await jsm.streams.getMessage(Streams.TASKS.name, { seq });
      if (message) stored.push(new TextDecoder().decode(message.data));
    }
    for (const canary of CANARIES) {
      expect(everything.filter((text) => text.includes(canary))).toEqual([]);
      expect(stored.filter((text) => text.includes(canary))).toEqual([]);
      expect(gw.logs.filter((line) => line.includes(canary))).toEqual([]);
    }
  });
});
