/**
 * The Responses API door (`/v1/responses`) on the least-privilege NATS users: a response runs to the end
 * (its thread created by the gateway's own user), no other account reaches it by any route (retrieve,
 * resumed stream, cancel, continuing it by `previous_response_id` or its thread by `conversation`), and
 * bad input on every route is refused in OpenAI's error shape before anything runs.
 */
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, startSecureMesh, type SecureMesh } from './secure-mesh.js';

const OTHER_ACCOUNT = 'globex';

let mesh: SecureMesh;
let model: ScriptedModel;
let otherKey: string;

async function admin(method: string, path: string, body: unknown, account = ACCOUNT): Promise<Response> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      'x-account-id': account,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
  return response;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function door(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; raw?: string; contentType?: string } = {},
): Promise<Answer> {
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await fetch(`${mesh.gatewayUrl}${path}`, {
    method,
    headers: {
      ...(options.key === '' ? {} : { authorization: `Bearer ${options.key ?? mesh.apiKey}` }),
      ...(body === undefined ? {} : { 'content-type': options.contentType ?? 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const errorOf = (answer: Answer) => answer.body.error as { code: string; param: string | null; type: string };

beforeAll(async () => {
  model = await startScriptedModel({ respond: () => ({ content: 'Answered for acme.' }) });
  mesh = await startSecureMesh({
    recall: {
      ONTOLOGY_QUERY_URL: 'http://127.0.0.1:9',
      OPERATOR_INTEGRATION_URL: 'http://127.0.0.1:9',
      API_URL_TEMPLATE: 'http://127.0.0.1:9/{box_id}/{tool_id}',
    },
    keepNatsLog: true,
    // As a deployment does: the gateway then never tries (and is refused) creating the streams itself.
    provisionFirst: true,
  });
  await admin('POST', '/agents', {
    workflow_id: 'acme_only',
    model: { model_name: 'scripted', base_url: model.baseUrl },
  });
  otherKey = (
    (await (await admin('POST', '/api-keys', { account_id: OTHER_ACCOUNT }, OTHER_ACCOUNT)).json()) as {
      api_key: string;
    }
  ).api_key;
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
});

describe('the Responses API across accounts', () => {
  it("no other account retrieves, streams, cancels or continues a response, nor runs the account's agent or joins its thread", async () => {
    const created = await door('POST', '/v1/responses', { body: { model: 'acme_only', input: 'hello' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ status: 'completed', conversation: { id: expect.any(String) } });
    const id = created.body.id as string;
    const threadId = (created.body.conversation as { id: string }).id;
    expect((await door('GET', `/v1/responses/${id}`)).body).toMatchObject({ id, status: 'completed' });

    const attempts = [
      await door('GET', `/v1/responses/${id}`, { key: otherKey }),
      await door('GET', `/v1/responses/${id}?stream=true&starting_after=0`, { key: otherKey }),
      await door('POST', `/v1/responses/${id}/cancel`, { key: otherKey }),
    ];
    for (const attempt of attempts) {
      expect(attempt.status).toBe(404);
      expect(errorOf(attempt)).toMatchObject({ code: 'not_found', param: 'response_id' });
    }
    const continued = await door('POST', '/v1/responses', {
      key: otherKey,
      body: { model: 'acme_only', input: 'x', previous_response_id: id },
    });
    // The agent is acme's own: the other account is refused before anything else is looked up.
    expect(continued.status).toBe(404);
    expect(errorOf(continued)).toMatchObject({ code: 'model_not_found', param: 'model' });

    // With an agent of its own, the other account still cannot reach acme's response or thread.
    await admin(
      'POST',
      '/agents',
      { workflow_id: 'globex_agent', model: { model_name: 'scripted', base_url: model.baseUrl } },
      OTHER_ACCOUNT,
    );
    const byPrevious = await door('POST', '/v1/responses', {
      key: otherKey,
      body: { model: 'globex_agent', input: 'x', previous_response_id: id },
    });
    expect(byPrevious.status).toBe(404);
    expect(errorOf(byPrevious)).toMatchObject({ code: 'not_found', param: 'previous_response_id' });
    const byThread = await door('POST', '/v1/responses', {
      key: otherKey,
      body: { model: 'globex_agent', input: 'x', conversation: threadId },
    });
    expect(byThread.status).toBe(404);
    expect(errorOf(byThread)).toMatchObject({ code: 'not_found', param: 'conversation' });
    // Acme's own thread is untouched: one turn.
    const thread = await door('GET', `/v1/threads/${threadId}`);
    expect((thread.body.runs as string[]).length).toBe(1);

    // Acme's own: a stream replayed from its log, and a cancel of an ended response answers it as it ended.
    const replay = await fetch(`${mesh.gatewayUrl}/v1/responses/${id}?stream=true`, {
      headers: { authorization: `Bearer ${mesh.apiKey}` },
    });
    expect(replay.status).toBe(200);
    expect(await replay.text()).toContain('event: response.completed');
    expect((await door('POST', `/v1/responses/${id}/cancel`)).body).toMatchObject({
      id,
      status: 'completed',
    });
  });
});

describe('bad input on every Responses route', () => {
  it('is refused in OpenAI shape: no key, bad JSON, wrong content type, bad fields, bad ids and sequence numbers', async () => {
    const noKey = await door('POST', '/v1/responses', { key: '', body: { model: 'acme_only', input: 'x' } });
    expect(noKey.status).toBe(401);
    expect(errorOf(noKey)).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
    expect((await door('GET', '/v1/responses/resp_x', { key: 'am_test_wrong' })).status).toBe(401);

    const badJson = await door('POST', '/v1/responses', { raw: '{"model":' });
    expect(badJson.status).toBe(400);
    expect(errorOf(badJson).type).toBe('invalid_request_error');
    const wrongType = await door('POST', '/v1/responses', { raw: 'model=x', contentType: 'text/plain' });
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.error).toBeDefined();

    const refusals: [unknown, string][] = [
      [{ input: 'x' }, 'model'],
      [{ model: 'acme_only', input: '' }, 'input'],
      [{ model: 'acme_only', input: 'x', tools: [{ type: 'web_search' }] }, 'tools'],
      [
        { model: 'acme_only', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }] },
        'input[0].type',
      ],
      [{ model: 'acme_only', input: 'x', previous_response_id: '../../etc' }, 'previous_response_id'],
      [{ model: 'acme_only', input: 'x', conversation: 'a.b>' }, 'conversation'],
      [{ model: 'acme_only', input: 'x', user: 'x'.repeat(10_000) }, 'user'],
      [
        { model: 'acme_only', input: 'x', text: { format: { type: 'json_schema', name: 'n' } } },
        'text.format.schema',
      ],
    ];
    for (const [body, param] of refusals) {
      const answer = await door('POST', '/v1/responses', { body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(answer).param, JSON.stringify(answer.body)).toBe(param);
    }

    for (const path of [
      '/v1/responses/not-a-response',
      '/v1/responses/resp_zz',
      '/v1/responses/resp_x/cancel',
    ]) {
      const answer = await door(path.endsWith('cancel') ? 'POST' : 'GET', path);
      expect(answer.status).toBe(400);
      expect(errorOf(answer).param).toBe('response_id');
    }
    const created = await door('POST', '/v1/responses', {
      body: { model: 'acme_only', input: 'x', background: true },
    });
    for (const after of ['-1', '1e3', 'x']) {
      const answer = await door(
        'GET',
        `/v1/responses/${created.body.id as string}?stream=true&starting_after=${after}`,
      );
      expect(answer.status).toBe(400);
      expect(errorOf(answer).param).toBe('starting_after');
    }
  });
});

describe('on the least-privilege users', () => {
  it('nats-server logged no permission violation for any of it', () => {
    const violations = mesh.nats
      .log()
      .filter((line) => /(Permissions|Publish|Subscription) Violation/i.test(line));
    expect(violations, `nats-server refused these calls:\n${violations.join('\n')}`).toEqual([]);
  });
});
