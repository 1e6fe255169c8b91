/**
 * Agent model lists and output schemas at the gateway's doors, on a real NATS server: an agent with an
 * ordered list of models (keys named, limits set) and an output schema is stored and read back as given, by
 * its own account only; a list that is empty, too long or carries a key in clear is refused naming the
 * field; a submission's output schema is queued with the task, and one that is not an object is refused.
 */
import { decodeJson } from '@agentmesh/bus';
import { ErrorBody, ReceivedTask, Streams, taskReceivedSubject } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-models-8899aabbccddeeff';
const TENANT_KEY = 'tenant-key-models-0f1e2d3c4b5a6978';

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;

const asAccount = (accountId: string) => ({ ...bearer(ADMIN_KEY), 'x-account-id': accountId });
const first = {
  provider: 'openai',
  model_name: 'gpt-4o-mini',
  base_url: 'https://api.openai.com/v1',
  api_key_credential: 'OPENAI_KEY',
  limits: { max_concurrent: 20, rpm: 500 },
};
const second = {
  provider: 'mistral',
  model_name: 'mistral-small-latest',
  base_url: 'https://api.mistral.ai/v1',
  api_key_credential: 'MISTRAL_KEY',
  first_byte_timeout_ms: 10_000,
};
const schema = { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'] };

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { ADMIN_API_KEYS: ADMIN_KEY, API_KEYS: `${TENANT_KEY}=models_a` });
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
});

afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

describe('agent model lists and output schemas', () => {
  it('when an account stores an agent with a model list and an output schema, it reads them back as given, and another account does not see it', async () => {
    const created = await call(gw.url, 'POST', '/v1/admin/agents', {
      headers: asAccount('models_a'),
      body: { workflow_id: 'listed', model: [first, second], output_schema: schema },
    });
    expect(created.status).toBe(201);

    const read = await call(gw.url, 'GET', '/v1/admin/agents/listed', { headers: asAccount('models_a') });
    expect(read.body).toMatchObject({ model: [first, second], output_schema: schema });
    const other = await call(gw.url, 'GET', '/v1/admin/agents/listed', { headers: asAccount('models_b') });
    expect(other.status).toBe(404);
  });

  it('when the list is empty, longer than eight, or an entry holds a key in clear, the agent is refused INVALID_REQUEST naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [[], 'model'],
      [Array(9).fill(first), 'model'],
      [[first, { ...second, api_key: 'sk-in-clear' }], 'model[1].api_key'],
    ];
    for (const [model, path] of cases) {
      const refused = await call(gw.url, 'POST', '/v1/admin/agents', {
        headers: asAccount('models_a'),
        body: { workflow_id: 'refused', model },
      });
      expect(refused.status).toBe(400);
      const body = ErrorBody.parse(refused.body);
      expect(body.code).toBe('INVALID_REQUEST');
      expect(JSON.stringify(body)).toContain(path);
      expect(JSON.stringify(body)).not.toContain('sk-in-clear');
    }
  });

  it('when a submission gives an output schema, it is queued with the task; one that is not an object is refused INVALID_REQUEST', async () => {
    const submission = { workflow_id: 'listed', user_id: 'u-1', messages: [{ role: 'user', content: 'hi' }] };
    const accepted = await call(gw.url, 'POST', '/v1/tasks', {
      headers: bearer(TENANT_KEY),
      body: { ...submission, output_schema: schema },
    });
    expect(accepted.status).toBe(202);
    const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
      last_by_subj: taskReceivedSubject('models_a'),
    });
    expect(decodeJson(ReceivedTask, stored!.data, 'test').output_schema).toEqual(schema);

    const refused = await call(gw.url, 'POST', '/v1/tasks', {
      headers: bearer(TENANT_KEY),
      body: { ...submission, output_schema: 'answer with JSON' },
    });
    expect(refused.status).toBe(400);
    expect(ErrorBody.parse(refused.body).code).toBe('INVALID_REQUEST');
  });
});
