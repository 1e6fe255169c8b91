/**
 * The A2A door (issue 26) on the least-privilege NATS users, with a real assembler and executor and a
 * scripted model: an A2A message runs end to end (A2A 1.0 and 0.3 method names), another account sees
 * none of it (cards, tasks, cancel, subscribe), and malformed JSON-RPC is answered with JSON-RPC errors
 * that say what is wrong, the gateway answering on afterwards.
 */
import { randomUUID } from 'node:crypto';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, startSecureMesh, type SecureMesh } from './secure-mesh.js';

const OTHER_ACCOUNT = 'globex';
const OTHER_KEY = `am_globex_${randomUUID().replaceAll('-', '')}`;

let mesh: SecureMesh;
let model: ScriptedModel;

async function management(account: string, method: string, path: string, body?: unknown): Promise<number> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      'x-account-id': account,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body ?? {}),
  });
  await response.text();
  return response.status;
}

interface RpcAnswer {
  status: number;
  body: {
    jsonrpc?: string;
    id?: unknown;
    result?: Record<string, unknown>;
    error?: { code: number; message: string };
  };
  text: string;
}

/** One JSON-RPC call (or any raw body) to an agent's endpoint. */
async function rpc(
  key: string | undefined,
  agent: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<RpcAnswer> {
  const response = await fetch(`${mesh.gatewayUrl}/a2a/${agent}`, {
    method: 'POST',
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      'content-type': 'application/json',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: RpcAnswer['body'] = {};
  try {
    parsed = JSON.parse(text) as RpcAnswer['body'];
  } catch {
    // An event stream: its text is the answer.
  }
  return { status: response.status, body: parsed, text };
}

const call = (method: string, params: unknown) => ({ jsonrpc: '2.0', id: 1, method, params });
const userMessage = (text: string) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });

let acmeTaskId: string;

beforeAll(async () => {
  model = await startScriptedModel({ respond: () => ({ content: 'scripted answer' }) });
  mesh = await startSecureMesh({
    recall: {
      ONTOLOGY_QUERY_URL: 'http://127.0.0.1:9',
      OPERATOR_INTEGRATION_URL: 'http://127.0.0.1:9',
      API_URL_TEMPLATE: 'http://127.0.0.1:9/{box_id}/{tool_id}',
    },
  });
  expect(
    await management(ACCOUNT, 'PUT', '/accounts/acme/users/u1/credentials/MODEL_KEY', { value: 'k' }),
  ).toBeLessThan(300);
  expect(
    await management(ACCOUNT, 'PUT', '/agents/assistant', {
      description: 'acme only',
      model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    }),
  ).toBeLessThan(300);
  expect(
    await management(OTHER_ACCOUNT, 'PUT', '/agents/rival', {
      model: { model_name: 'scripted', base_url: model.baseUrl },
    }),
  ).toBeLessThan(300);
  expect(
    await management(OTHER_ACCOUNT, 'POST', '/api-keys', { account_id: OTHER_ACCOUNT, api_key: OTHER_KEY }),
  ).toBe(201);
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
});

describe('the A2A door on the least-privilege users', () => {
  it('when an A2A client sends a message, the mesh runs it with the agent and answers the completed task (1.0 and 0.3 names)', async () => {
    const sent = await rpc(
      mesh.apiKey,
      'assistant',
      call('SendMessage', { message: userMessage('hello'), metadata: { user_id: 'u1' } }),
    );
    expect(sent.status, sent.text).toBe(200);
    const task = sent.body.result?.task as {
      id: string;
      status: { state: string };
      artifacts: { parts: { text?: string }[] }[];
    };
    expect(task.status.state, sent.text).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]?.parts[0]?.text).toBe('scripted answer');
    acmeTaskId = task.id;
    const status = await fetch(`${mesh.gatewayUrl}/v1/tasks/${task.id}`, {
      headers: { authorization: `Bearer ${mesh.apiKey}` },
    });
    expect(status.status).toBe(200);

    const legacy = await rpc(
      mesh.apiKey,
      'assistant',
      call('message/send', {
        message: {
          kind: 'message',
          messageId: randomUUID(),
          role: 'user',
          parts: [{ kind: 'text', text: 'hi' }],
        },
        metadata: { user_id: 'u1' },
      }),
    );
    expect(legacy.body.result, legacy.text).toMatchObject({ kind: 'task', status: { state: 'completed' } });
  });

  it("when another account asks, the agent's cards, its task, cancel and subscribe are not found", async () => {
    expect(acmeTaskId).toBeDefined();
    const card = await fetch(`${mesh.gatewayUrl}/a2a/assistant/.well-known/agent-card.json`, {
      headers: { authorization: `Bearer ${OTHER_KEY}` },
    });
    expect(card.status).toBe(404);
    const catalogue = await fetch(`${mesh.gatewayUrl}/.well-known/agent-card.json`, {
      headers: { authorization: `Bearer ${OTHER_KEY}` },
    });
    const skills = ((await catalogue.json()) as { skills: { id: string }[] }).skills.map((skill) => skill.id);
    expect(skills).toContain('rival');
    expect(skills).not.toContain('assistant');
    expect((await rpc(OTHER_KEY, 'assistant', call('GetTask', { id: acmeTaskId }))).status).toBe(404);

    // Through its own agent's endpoint, the other account's task id is just not there.
    for (const method of [
      'GetTask',
      'CancelTask',
      'SubscribeToTask',
      'tasks/get',
      'tasks/cancel',
      'tasks/resubscribe',
    ]) {
      const answer = await rpc(OTHER_KEY, 'rival', call(method, { id: acmeTaskId }));
      expect(answer.body.error?.code, `${method}: ${answer.text}`).toBe(-32001);
      expect(answer.text).not.toContain('scripted answer');
    }
    // Nor does the owner reach it through another agent's endpoint of another account.
    expect((await rpc(mesh.apiKey, 'rival', call('GetTask', { id: acmeTaskId }))).status).toBe(404);
  });

  it('when a request carries no key, cards and calls are 401', async () => {
    for (const path of [
      '/.well-known/agent-card.json',
      '/.well-known/agent.json',
      '/a2a/assistant/.well-known/agent-card.json',
    ]) {
      const response = await fetch(`${mesh.gatewayUrl}${path}`);
      expect(response.status, path).toBe(401);
      expect(await response.text()).not.toContain('assistant');
    }
    const unauthenticated = await rpc(undefined, 'assistant', call('GetTask', { id: acmeTaskId }));
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body.error?.message).toBeTruthy();
  });

  it('when the JSON-RPC is malformed, each answer is a JSON-RPC error naming the fault, and the door answers on', async () => {
    const cases: [string, unknown, Record<string, string>, number][] = [
      ['not JSON', '{"jsonrpc":', {}, -32700],
      ['a batch', [call('GetTask', { id: acmeTaskId })], {}, -32600],
      ['no method', { jsonrpc: '2.0', id: 1, params: {} }, {}, -32602],
      ['an unknown method', call('TakeOverTheWorld', {}), {}, -32601],
      ['no message', call('SendMessage', {}), {}, -32602],
      [
        'a file part',
        call('SendMessage', { message: { ...userMessage('x'), parts: [{ url: 'http://127.0.0.1/x' }] } }),
        {},
        -32602,
      ],
      ['a task id that is no trace id', call('GetTask', { id: '../../etc' }), {}, -32001],
      [
        'a context id that is no thread id',
        call('SendMessage', { message: { ...userMessage('x'), contextId: 'a.b' } }),
        {},
        -32602,
      ],
      [
        'a bad Last-Event-ID',
        call('SubscribeToTask', { id: acmeTaskId }),
        { 'last-event-id': 'yesterday' },
        -32602,
      ],
      [
        'push notification config',
        call('CreateTaskPushNotificationConfig', { taskId: acmeTaskId, url: 'http://127.0.0.1:9/hook' }),
        {},
        -32003,
      ],
    ];
    for (const [what, body, headers, code] of cases) {
      const answer = await rpc(mesh.apiKey, 'assistant', body, headers);
      expect(answer.status, `${what}: ${answer.text}`).toBe(200);
      expect(answer.body.jsonrpc, what).toBe('2.0');
      expect(answer.body.error?.code, `${what}: ${answer.text}`).toBe(code);
      expect(answer.body.error?.message.length, what).toBeGreaterThan(5);
    }
    const still = await rpc(mesh.apiKey, 'assistant', call('GetTask', { id: acmeTaskId }));
    expect(still.body.result, still.text).toMatchObject({
      id: acmeTaskId,
      status: { state: 'TASK_STATE_COMPLETED' },
    });
  });
});
