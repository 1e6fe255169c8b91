// Seed 004's HTTP forms of recall, answered by a recall stand-in (a real NATS micro service on
// mesh.recall.actions): tools pass through, each of the seed's error rows keeps its status and body, the
// account headers are required and reach the service, and a missing or silent service is a 502.
import { startTelemetry, type Telemetry } from '@agentmesh/runtime';
import {
  startNats,
  startRecallStandIn,
  type NatsServer,
  type RecallStandIn,
  type RecallStandInAnswer,
} from '@agentmesh/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-recall-0123456789ab';
const ACME_KEY = 'acme-key-recall-0123456789abcd';

const seedTool = {
  name: 'search_object_instance',
  description: 'query object instances by a single object type',
  parameters: {
    type: 'object',
    properties: { kn_id: { type: 'string' }, limit: { type: 'integer' } },
    required: ['kn_id'],
  },
  api_url: 'http://127.0.0.1:9/api/agent-operator-integration/internal-v1/tool-box/box-1/proxy/tool-1',
  original_schema: { parameters: [] },
  fixed_params: { header: { 'x-account-id': 'test' }, path: {}, query: {}, body: {} },
};

/** The seed's error rows, as the recall service answers them (service error code = seed status). */
const errorRows: Record<
  string,
  { status: number; body: { code: string; message: string; detail?: unknown } }
> = {
  'kn-upstream-down': {
    status: 502,
    body: {
      code: 'SERVICE_UNAVAILABLE',
      message: 'the action query failed',
      detail: { upstream: 'ontology-query', reason: 'status', status: 503, body_excerpt: '{"error":"busy"}' },
    },
  },
  'kn-bad-identity': {
    status: 400,
    body: { code: 'INVALID_REQUEST', message: 'unique_identity.disease_id: invalid value' },
  },
  'kn-mcp': {
    status: 400,
    body: {
      code: 'UNSUPPORTED_ACTION_TYPE',
      message: 'only action sources of type=tool are supported',
      detail: { action_source: { type: 'mcp', box_id: 'xxx', tool_id: 'yyy' } },
    },
  },
  'kn-conversion': {
    status: 500,
    body: {
      code: 'SCHEMA_CONVERSION_ERROR',
      message: 'the tool definition could not be converted into a function schema',
      detail: { box_id: 'b', tool_id: 't' },
    },
  },
};

function script(request: { body: Record<string, unknown> }): RecallStandInAnswer {
  const knId = String(request.body.kn_id);
  const row = errorRows[knId];
  if (row) return { error: { status: row.status, body: row.body, description: row.body.message } };
  if (knId === 'kn-empty') return { body: { _dynamic_tools: [] } };
  if (knId === 'kn-json-error')
    return { raw: JSON.stringify({ code: 'UNSUPPORTED_ACTION_TYPE', message: 'only tool sources' }) };
  if (knId === 'kn-headers-only') return { error: { status: 502, description: 'upstream timed out' } };
  if (knId === 'kn-garbage') return { raw: 'not json at all' };
  return { body: { _dynamic_tools: [seedTool] } };
}

const account = { 'x-account-id': 'bdb78b62-6c48', 'x-account-type': 'user' };
const identity = { unique_identity: { disease_id: 'disease_000001' } };
const recallPath = (knId: string, atId = 'generate_treatment_plan') =>
  `/api/action-recall/v1/knowledge-networks/${knId}/action-types/${atId}/recall`;
const actionInfoPath = (knId: string, atId = 'generate_treatment_plan') =>
  `/api/agent-retrieval/in/v1/kn/get_action_info?kn_id=${knId}&at_id=${atId}`;

let telemetry: Telemetry;
let nats: NatsServer;
let gw: TestGateway;
let trusted: TestGateway;

beforeAll(async () => {
  // The real SDK, as services run it, so traceparent reaches the message headers.
  telemetry = startTelemetry({ service: 'gateway-recall-test', env: {} });
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    ADMIN_API_KEYS: ADMIN_KEY,
    API_KEYS: `${ACME_KEY}=acme:user`,
    RECALL_TIMEOUT_MS: '500',
  });
  trusted = await startTestGateway(nats.url, { TRUST_ACCOUNT_HEADERS: 'true', RECALL_TIMEOUT_MS: '500' });
});
afterAll(async () => {
  await trusted?.stop();
  await gw?.stop();
  await nats?.stop();
  await telemetry?.shutdown();
});

describe('with the recall service up', () => {
  let standInConnection: NatsConnection;
  let standIn: RecallStandIn;
  beforeAll(async () => {
    standInConnection = await connect({ servers: nats.url, name: 'recall-stand-in' });
    standIn = await startRecallStandIn(standInConnection, script);
  });
  afterAll(async () => {
    await standIn?.stop();
    await standInConnection?.drain();
  });

  it("the seed appendix request gets the service's _dynamic_tools unchanged, and the service hears the ids, the identity, the account headers and the trace", async () => {
    const traceId = 'f'.repeat(31) + '1';
    const answer = await call(trusted.url, 'POST', recallPath('kn_medical'), {
      body: identity,
      headers: { ...account, traceparent: `00-${traceId}-${'a'.repeat(16)}-01` },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ _dynamic_tools: [seedTool] });

    const heard = standIn.requests.find((r) => r.body.kn_id === 'kn_medical');
    expect(heard?.body).toEqual({
      kn_id: 'kn_medical',
      at_id: 'generate_treatment_plan',
      unique_identity: { disease_id: 'disease_000001' },
      account_id: 'bdb78b62-6c48',
      account_type: 'user',
    });
    expect(heard?.headers).toMatchObject({ 'x-account-id': 'bdb78b62-6c48', 'x-account-type': 'user' });
    // The caller's trace continues: same trace id, a new parent span (the gateway's).
    expect(heard?.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(heard?.headers.traceparent).not.toContain('a'.repeat(16));
  });

  it('get_action_info takes kn_id and at_id from the query and unique_identities (plural) in the body', async () => {
    const answer = await call(gw.url, 'POST', actionInfoPath('kn-plural', 'at-1'), {
      body: { unique_identities: [{ disease_id: 'd1' }, { disease_id: 'd2' }] },
      headers: { ...bearer(ADMIN_KEY), ...account },
    });
    expect(answer.status).toBe(200);
    expect(answer.body._dynamic_tools).toHaveLength(1);
    const heard = standIn.requests.find((r) => r.body.kn_id === 'kn-plural');
    expect(heard?.body).toMatchObject({
      at_id: 'at-1',
      unique_identities: [{ disease_id: 'd1' }, { disease_id: 'd2' }],
    });
  });

  it('an object without actions gets 200 with an empty _dynamic_tools', async () => {
    const answer = await call(trusted.url, 'POST', recallPath('kn-empty'), {
      body: identity,
      headers: account,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ _dynamic_tools: [] });
  });

  it.each(Object.entries(errorRows))(
    'when the service refuses with %s, both forms answer its status and its error body unchanged',
    async (knId, row) => {
      for (const path of [recallPath(knId), actionInfoPath(knId)]) {
        const answer = await call(trusted.url, 'POST', path, { body: identity, headers: account });
        expect(answer.status).toBe(row.status);
        expect(answer.body).toEqual(row.body);
      }
    },
  );

  it('a plain JSON error body without service headers still gets the seed status of its code', async () => {
    const answer = await call(trusted.url, 'POST', recallPath('kn-json-error'), {
      body: identity,
      headers: account,
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 'UNSUPPORTED_ACTION_TYPE', message: 'only tool sources' });
  });

  it('a service error with no body keeps its status, and its description becomes the message', async () => {
    const answer = await call(trusted.url, 'POST', recallPath('kn-headers-only'), {
      body: identity,
      headers: account,
    });
    expect(answer.status).toBe(502);
    expect(answer.body).toEqual({ code: 'SERVICE_UNAVAILABLE', message: 'upstream timed out' });
  });

  it('an answer that is neither tools nor an error is a 502 SERVICE_UNAVAILABLE with an excerpt', async () => {
    const answer = await call(trusted.url, 'POST', recallPath('kn-garbage'), {
      body: identity,
      headers: account,
    });
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { answer_excerpt: 'not json at all' },
    });
  });

  it.each([
    ['no account headers', {}, ['x-account-id', 'x-account-type']],
    ['no x-account-type', { 'x-account-id': 'acme' }, ['x-account-type']],
    ['no x-account-id', { 'x-account-type': 'user' }, ['x-account-id']],
  ])(
    'with %s the request is 400 INVALID_REQUEST naming them, and nothing reaches the service',
    async (_label, headers, missing) => {
      const knId = `kn-missing-${missing.join('-')}`;
      const before = standIn.requests.length;
      for (const path of [recallPath(knId), actionInfoPath(knId)]) {
        const answer = await call(trusted.url, 'POST', path, { body: identity, headers });
        expect(answer.status).toBe(400);
        expect(answer.body).toMatchObject({ code: 'INVALID_REQUEST', detail: { missing_headers: missing } });
        expect(answer.body.message).toContain(missing[0]);
      }
      expect(standIn.requests.length).toBe(before);
    },
  );

  it('a malformed unique_identity, or both forms at once, is 400 INVALID_REQUEST from the gateway', async () => {
    const malformed = await call(trusted.url, 'POST', recallPath('kn-malformed'), {
      body: { unique_identity: { disease_id: { nested: true } } },
      headers: account,
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('INVALID_REQUEST');
    expect(malformed.body.message).toContain('unique_identity');
    const both = await call(trusted.url, 'POST', recallPath('kn-both'), {
      body: { ...identity, unique_identities: [{ a: 1 }] },
      headers: account,
    });
    expect(both.status).toBe(400);
    expect(both.body.message).toContain('either unique_identity or unique_identities');
  });

  it('get_action_info without kn_id in the query is 400 INVALID_REQUEST naming it', async () => {
    const answer = await call(trusted.url, 'POST', '/api/agent-retrieval/in/v1/kn/get_action_info?at_id=a', {
      body: identity,
      headers: account,
    });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('INVALID_REQUEST');
    expect(answer.body.message).toContain('kn_id');
  });

  it("callers follow the gateway's rules: no key is 401 where headers are not trusted, an API key acts only for its own account and type", async () => {
    const anonymous = await call(gw.url, 'POST', recallPath('kn-auth'), { body: identity, headers: account });
    expect(anonymous.status).toBe(401);

    const own = await call(gw.url, 'POST', recallPath('kn-auth-own'), {
      body: identity,
      headers: { ...bearer(ACME_KEY), 'x-account-id': 'acme', 'x-account-type': 'user' },
    });
    expect(own.status).toBe(200);
    expect(standIn.requests.find((r) => r.body.kn_id === 'kn-auth-own')?.headers['x-account-id']).toBe(
      'acme',
    );

    const otherAccount = await call(gw.url, 'POST', recallPath('kn-auth-other'), {
      body: identity,
      headers: { ...bearer(ACME_KEY), 'x-account-id': 'beta', 'x-account-type': 'user' },
    });
    expect(otherAccount.status).toBe(403);
    const otherType = await call(gw.url, 'POST', recallPath('kn-auth-type'), {
      body: identity,
      headers: { ...bearer(ACME_KEY), 'x-account-id': 'acme', 'x-account-type': 'admin' },
    });
    expect(otherType.status).toBe(403);
    expect(
      standIn.requests.some(
        (r) => String(r.body.kn_id).startsWith('kn-auth-') && r.body.kn_id !== 'kn-auth-own',
      ),
    ).toBe(false);
  });
});

describe('with the recall service down', () => {
  it('no responder on mesh.recall.actions is 502 SERVICE_UNAVAILABLE saying so (not a time-out)', async () => {
    const answer = await call(trusted.url, 'POST', recallPath('kn-nobody'), {
      body: identity,
      headers: account,
    });
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(answer.body.message).toContain('not running');
  });

  it('a responder that never answers is 502 SERVICE_UNAVAILABLE after RECALL_TIMEOUT_MS', async () => {
    let client: NatsConnection | undefined;
    try {
      client = await connect({ servers: nats.url });
      let heard = 0;
      client.subscribe('mesh.recall.actions', { callback: () => void heard++ });
      await client.flush();
      const answer = await call(trusted.url, 'POST', recallPath('kn-silent'), {
        body: identity,
        headers: account,
      });
      expect(answer.status).toBe(502);
      expect(answer.body.code).toBe('SERVICE_UNAVAILABLE');
      expect(answer.body.message).toContain('did not answer within 500 ms');
      expect(heard).toBe(1);
    } finally {
      await client?.close();
    }
  });
});
