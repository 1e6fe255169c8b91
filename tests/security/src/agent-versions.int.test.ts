/**
 * Agent versions on the least-privilege NATS users (issue 25): the gateway's user keeps versions in
 * `mesh_agents` (creates, lists, purges the old ones), the assembler's user reads a pinned one, and no
 * account sees or moves another account's versions through the management plane.
 */
import { SseParser } from '@agentmesh/sse';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import type { TaskEvent } from '@agentmesh/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, startSecureMesh, type SecureMesh } from './secure-mesh.js';

const OTHER_ACCOUNT = 'globex';

let mesh: SecureMesh;
let model: ScriptedModel;

async function management(
  account: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      'x-account-id': account,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

beforeAll(async () => {
  model = await startScriptedModel({
    respond: (request) => ({
      content: `ran with: ${request.body.messages.find((message) => message.role === 'system')?.content}`,
    }),
  });
  mesh = await startSecureMesh({
    recall: {
      ONTOLOGY_QUERY_URL: 'http://127.0.0.1:9',
      OPERATOR_INTEGRATION_URL: 'http://127.0.0.1:9',
      API_URL_TEMPLATE: 'http://127.0.0.1:9/{box_id}/{tool_id}',
    },
  });
  expect(
    (await management(ACCOUNT, 'PUT', '/accounts/acme/users/u1/credentials/MODEL_KEY', { value: 'k' }))
      .status,
  ).toBeLessThan(300);
  for (const prompt of ['PROMPT ONE', 'PROMPT TWO']) {
    const written = await management(ACCOUNT, 'PUT', '/agents/versioned', {
      system_prompt: prompt,
      model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    });
    expect(written.status, JSON.stringify(written.body)).toBeLessThan(300);
  }
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
});

async function sseEvents(traceId: string): Promise<TaskEvent[]> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}/events`, {
    headers: { authorization: `Bearer ${mesh.apiKey}`, accept: 'text/event-stream' },
  });
  expect(response.status).toBe(200);
  const parser = new SseParser();
  return [...parser.push(await response.text()), ...parser.end()].map(
    (message) => JSON.parse(message.data) as TaskEvent,
  );
}

describe('agent versions on the least-privilege users', () => {
  it('when a task pins version 1 of an agent now at 2, the assembler (as its own NATS user) runs version 1', async () => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        workflow_id: 'versioned@1',
        user_id: 'u1',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(response.status).toBe(202);
    const { trace_id } = (await response.json()) as { trace_id: string };
    const events = await sseEvents(trace_id);
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'ran with: PROMPT ONE' } });
    expect(events[0]?.agent).toMatchObject({ workflow_id: 'versioned', version: 1 });
  });

  it('when another account asks for the versions, a version, a diff or a rollback, it gets 404 and nothing moves', async () => {
    for (const [method, path, body] of [
      ['GET', '/agents/versioned/versions', undefined],
      ['GET', '/agents/versioned/versions/1', undefined],
      ['GET', '/agents/versioned/diff?from=1&to=2', undefined],
      ['POST', '/agents/versioned/rollback', { version: 1 }],
    ] as const) {
      const answer = await management(OTHER_ACCOUNT, method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(answer.body)).not.toContain('PROMPT');
    }
    const own = await management(ACCOUNT, 'GET', '/agents/versioned/versions');
    expect(own.body).toMatchObject({ current: 2 });
  });

  it('when the owning account rolls back, its next write is version 3 and old versions stay readable', async () => {
    expect(
      (await management(ACCOUNT, 'POST', '/agents/versioned/rollback', { version: 1 })).body,
    ).toMatchObject({
      version: 1,
    });
    const third = await management(ACCOUNT, 'PUT', '/agents/versioned', {
      system_prompt: 'PROMPT THREE',
      model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    });
    expect(third.body).toMatchObject({ version: 3 });
    expect((await management(ACCOUNT, 'GET', '/agents/versioned/versions/2')).body).toMatchObject({
      system_prompt: 'PROMPT TWO',
    });
  });
});
