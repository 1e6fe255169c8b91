/**
 * The AG-UI door on the least-privilege NATS users: a run started through it is the caller's account's
 * task, and neither its events nor its thread can be read from another account; bad input (no key, a body
 * that is not a RunAgentInput, an unknown agent, interrupt answers, a malformed Last-Event-ID) is refused
 * with the mesh's error body before anything runs.
 */
import { SseParser } from '@agentmesh/sse';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, startSecureMesh, type SecureMesh } from './secure-mesh.js';

const OTHER_ACCOUNT = 'globex';
const THREAD = 'ag-ui-tenancy-thread';

let mesh: SecureMesh;
let model: ScriptedModel;
let traceId: string;

const runInput = (overrides: Record<string, unknown> = {}) => ({
  threadId: THREAD,
  runId: 'run-1',
  messages: [{ id: 'm1', role: 'user', content: 'hello' }],
  tools: [],
  context: [],
  forwardedProps: { agentmesh: { user_id: 'u1' } },
  ...overrides,
});

async function post(path: string, body: unknown, headers: Record<string, string>) {
  return fetch(`${mesh.gatewayUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const asAcme = () => ({ authorization: `Bearer ${mesh.apiKey}` });
const asOther = () => ({ authorization: `Bearer ${mesh.adminKey}`, 'x-account-id': OTHER_ACCOUNT });

beforeAll(async () => {
  model = await startScriptedModel({ respond: () => ({ content: 'hi from the agent' }) });
  mesh = await startSecureMesh({
    recall: {
      ONTOLOGY_QUERY_URL: 'http://127.0.0.1:9',
      OPERATOR_INTEGRATION_URL: 'http://127.0.0.1:9',
      API_URL_TEMPLATE: 'http://127.0.0.1:9/{box_id}/{tool_id}',
    },
  });
  const admin = { authorization: `Bearer ${mesh.adminKey}`, 'x-account-id': ACCOUNT };
  const key = await fetch(`${mesh.gatewayUrl}/v1/admin/accounts/${ACCOUNT}/users/u1/credentials/MODEL_KEY`, {
    method: 'PUT',
    headers: { ...admin, 'content-type': 'application/json' },
    body: JSON.stringify({ value: 'k' }),
  });
  expect(key.status).toBeLessThan(300);
  const agent = await fetch(`${mesh.gatewayUrl}/v1/admin/agents/greeter`, {
    method: 'PUT',
    headers: { ...admin, 'content-type': 'application/json' },
    body: JSON.stringify({
      system_prompt: 'greet',
      model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    }),
  });
  expect(agent.status, await agent.text()).toBeLessThan(300);
  const run = await post('/v1/ag-ui/agents/greeter', runInput(), asAcme());
  expect(run.status).toBe(200);
  traceId = run.headers.get('x-agentmesh-trace-id') ?? '';
  const parser = new SseParser();
  const events = [...parser.push(await run.text()), ...parser.end()].map(
    (message) => JSON.parse(message.data) as { type: string },
  );
  expect(events.at(-1)?.type).toBe('RUN_FINISHED');
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
});

describe('the AG-UI door across accounts', () => {
  it("when another account asks for the run's events or its thread's, it gets 404 as for a task that does not exist; the owner gets the stream", async () => {
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    for (const path of [`/v1/ag-ui/tasks/${traceId}/events`, `/v1/ag-ui/threads/${THREAD}/events`]) {
      const other = await fetch(`${mesh.gatewayUrl}${path}`, { headers: asOther() });
      expect(other.status, path).toBe(404);
      expect(((await other.json()) as { code: string }).code).toBe('NOT_FOUND');
      const own = await fetch(`${mesh.gatewayUrl}${path}`, { headers: asAcme() });
      expect(own.status, path).toBe(200);
      expect(await own.text()).toContain('"RUN_FINISHED"');
    }
  });

  it("when another account posts a run on the same threadId or answers its interrupts, it is refused and the first account's thread keeps its one run", async () => {
    const other = await post('/v1/ag-ui/agents/greeter', runInput(), asOther());
    // globex has no agent `greeter`: refused before it could touch acme's thread.
    expect(other.status).toBe(404);
    // Nor can it answer the run's interrupts: the task is not its own.
    const resume = await post(
      '/v1/ag-ui/agents/greeter',
      runInput({ resume: [{ interruptId: `${traceId}:call_1`, status: 'resolved' }] }),
      asOther(),
    );
    expect(resume.status).toBe(404);
    const thread = await fetch(`${mesh.gatewayUrl}/v1/threads/${THREAD}`, { headers: asAcme() });
    expect(thread.status).toBe(200);
    expect(((await thread.json()) as { runs: string[] }).runs).toEqual([traceId]);
  });
});

describe('bad input at the AG-UI door', () => {
  it('when the request has no key, it is 401; when the body is no RunAgentInput, sends resume or has no user text, 400; an unknown agent, 404', async () => {
    expect((await post('/v1/ag-ui/agents/greeter', runInput(), {})).status).toBe(401);
    const cases: [unknown, number][] = [
      [{ threadId: THREAD }, 400],
      ['not json object', 400],
      [runInput({ messages: 'hello' }), 400],
      [runInput({ messages: [{ id: 'm1', role: 'assistant', content: 'only me' }] }), 400],
      [runInput({ resume: [{ interruptId: 'x:y', status: 'resolved' }] }), 400],
      [runInput({ forwardedProps: { agentmesh: { user_id: 5 } } }), 400],
    ];
    for (const [body, status] of cases) {
      const response = await post('/v1/ag-ui/agents/greeter', body, asAcme());
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(((await response.json()) as { code: string }).code).toBe('INVALID_REQUEST');
    }
    const unknown = await post(
      '/v1/ag-ui/agents/no_such_agent',
      runInput({ threadId: 'fresh-thread' }),
      asAcme(),
    );
    expect(unknown.status).toBe(404);
  });

  it('when Last-Event-ID is not a frame id, or the task id is not one, the GET is 400', async () => {
    const badId = await fetch(`${mesh.gatewayUrl}/v1/ag-ui/tasks/${traceId}/events`, {
      headers: { ...asAcme(), 'last-event-id': '12' },
    });
    expect(badId.status).toBe(400);
    const badTask = await fetch(`${mesh.gatewayUrl}/v1/ag-ui/tasks/not-a-trace/events`, {
      headers: asAcme(),
    });
    expect(badTask.status).toBe(400);
  });
});
