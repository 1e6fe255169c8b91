/** Submission rate limits on a real gateway: over HTTP and over the NATS ingress, before anything is written. */
import { ErrorBody, Streams, Subjects, taskReceivedSubject } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const LIMITED_KEY = 'limited-key-5d4c3b2a19087766';
const OTHER_KEY = 'other-key-0f1e2d3c4b5a6978';

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNats();
  // A rate so low that no refill can happen while a test runs.
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${LIMITED_KEY}=limited,${OTHER_KEY}=other`,
    SUBMIT_RATE_PER_API_KEY: '0.01',
  });
  await putSharedAgents(nats.url, 'qcc_agent');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const submission = {
  workflow_id: 'qcc_agent',
  user_id: 'u-1',
  messages: [{ role: 'user', content: 'hello' }],
};

async function storedTasks(account: string): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe('submission rate limits', () => {
  it('when an API key submits beyond its rate over HTTP, the surplus gets 429 RATE_LIMITED with Retry-After and nothing reaches the bus; another key is not affected', async () => {
    const first = await call(gw.url, 'POST', '/v1/tasks', { body: submission, headers: bearer(LIMITED_KEY) });
    const second = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission,
      headers: bearer(LIMITED_KEY),
    });
    expect(first.status).toBe(202);
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBe('100');
    expect(ErrorBody.parse(second.body)).toMatchObject({
      code: 'RATE_LIMITED',
      detail: { scope: 'api_key', retry_after_seconds: 100 },
    });
    expect(await storedTasks('limited')).toBe(1);

    const other = await call(gw.url, 'POST', '/v1/tasks', { body: submission, headers: bearer(OTHER_KEY) });
    expect(other.status).toBe(202);
  });

  it('the NATS ingress answers the same refusal, with the wait in the body', async () => {
    const headers = natsHeaders();
    headers.set('authorization', `Bearer ${OTHER_KEY}`);
    // OTHER_KEY spent its one token in the test before (tests of a file run in order).
    const reply = await client.request(Subjects.GATEWAY_SUBMIT, JSON.stringify(submission), {
      timeout: 5_000,
      headers,
    });
    expect(ErrorBody.parse(reply.json())).toMatchObject({
      code: 'RATE_LIMITED',
      detail: { scope: 'api_key', retry_after_seconds: 100 },
    });
    expect(await storedTasks('other')).toBe(1);
  });
});
