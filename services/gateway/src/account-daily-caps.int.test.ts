/**
 * Accounts' daily caps on a real gateway: once the executors have added an account's usage of the day to
 * `mesh_account_usage` (done here with the store the executors use), its next submission is refused, over
 * HTTP, the NATS ingress and the OpenAI façade alike, before anything reaches the bus; a submitted budget
 * is validated and queued with the task.
 */
import { AccountUsageStore, decodeJson, openMeshBuckets } from '@agentmesh/bus';
import { ErrorBody, ReceivedTask, Streams, Subjects, taskReceivedSubject, utcDay } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const TOKENS_KEY = 'tokens-key-8a7b6c5d4e3f2a1b';
const COSTLY_KEY = 'costly-key-1b2a3f4e5d6c7b8a';
const ADMIN_KEY = 'admin-key-caps-0011223344556677';

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;
let usage: AccountUsageStore;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${TOKENS_KEY}=tokens,${COSTLY_KEY}=costly`,
    ADMIN_API_KEYS: ADMIN_KEY,
    ACCOUNT_DAILY_TOKEN_CAP: '1000',
    ACCOUNT_DAILY_CAPS: JSON.stringify({ costly: { tokens: 0, cost_usd: 1.5 } }),
    ACCOUNT_USAGE_CACHE_MS: '0',
  });
  await putSharedAgents(nats.url, 'helper');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
  usage = new AccountUsageStore(
    (await openMeshBuckets(jetstream(client), { only: ['accountUsage'] })).accountUsage,
  );
  for (const account of ['tokens', 'costly']) {
    const created = await call(gw.url, 'POST', '/v1/admin/agents', {
      headers: { ...bearer(ADMIN_KEY), 'x-account-id': account },
      body: { workflow_id: 'helper', model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' } },
    });
    expect(created.status).toBe(201);
  }
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const submission = { workflow_id: 'helper', user_id: 'u-1', messages: [{ role: 'user', content: 'hello' }] };

async function storedTasks(account: string): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

function overNats(key: string) {
  const headers = natsHeaders();
  headers.set('authorization', `Bearer ${key}`);
  return client
    .request(Subjects.GATEWAY_SUBMIT, JSON.stringify(submission), { timeout: 5_000, headers })
    .then((reply) => reply.json<unknown>());
}

describe("accounts' daily caps at submit", () => {
  it('when a finished task pushed an account to its daily token cap, its next submission gets 429 RATE_LIMITED with a Retry-After to the next UTC day, over HTTP, NATS and the OpenAI façade', async () => {
    const first = await call(gw.url, 'POST', '/v1/tasks', { body: submission, headers: bearer(TOKENS_KEY) });
    expect(first.status).toBe(202);
    // The first task ends, and its executor adds what it used.
    await usage.add('tokens', utcDay(new Date()), { totalTokens: 1200, costUsd: 0 });

    const second = await call(gw.url, 'POST', '/v1/tasks', { body: submission, headers: bearer(TOKENS_KEY) });
    expect(second.status).toBe(429);
    const retryAfter = Number(second.headers['retry-after']);
    const untilMidnight = (Date.parse(`${utcDay(new Date())}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000;
    expect(Math.abs(retryAfter - untilMidnight)).toBeLessThan(60);
    expect(ErrorBody.parse(second.body)).toMatchObject({
      code: 'RATE_LIMITED',
      message: 'this account used 1200 tokens today (UTC) of its daily cap of 1000; retry after the day ends',
      detail: { scope: 'account_daily_tokens', used_tokens: 1200, cap_tokens: 1000 },
    });
    expect(ErrorBody.parse(await overNats(TOKENS_KEY))).toMatchObject({ code: 'RATE_LIMITED' });
    const completion = await call(gw.url, 'POST', '/v1/chat/completions', {
      body: { model: 'helper', messages: [{ role: 'user', content: 'hi' }] },
      headers: bearer(TOKENS_KEY),
    });
    expect(completion.status).toBe(429);
    expect(completion.body).toMatchObject({ error: { code: 'rate_limited', type: 'rate_limit_error' } });
    expect(await storedTasks('tokens')).toBe(1);
  });

  it('when an account has spent its daily cost cap, its next submission gets 402 BUDGET_EXCEEDED; its token use is not capped', async () => {
    const first = await call(gw.url, 'POST', '/v1/tasks', { body: submission, headers: bearer(COSTLY_KEY) });
    expect(first.status).toBe(202);
    await usage.add('costly', utcDay(new Date()), { totalTokens: 5000, costUsd: 1 });
    const under = await call(gw.url, 'POST', '/v1/tasks', { body: submission, headers: bearer(COSTLY_KEY) });
    expect(under.status).toBe(202);
    await usage.add('costly', utcDay(new Date()), { totalTokens: 5000, costUsd: 0.75 });

    const refused = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission,
      headers: bearer(COSTLY_KEY),
    });
    expect(refused.status).toBe(402);
    expect(ErrorBody.parse(refused.body)).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      detail: { scope: 'account_daily_cost', used_cost_usd: 1.75, cap_cost_usd: 1.5 },
    });
    expect(ErrorBody.parse(await overNats(COSTLY_KEY))).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(await storedTasks('costly')).toBe(2);
  });

  it('a submitted budget is queued with the task, and a budget that is not positive is refused INVALID_REQUEST', async () => {
    const budget = { max_total_tokens: 500, max_cost_usd: 0.25 };
    const other = await startTestGateway(nats.url, { API_KEYS: `${TOKENS_KEY}=budgeted` });
    try {
      const accepted = await call(other.url, 'POST', '/v1/tasks', {
        body: { ...submission, limits: budget },
        headers: bearer(TOKENS_KEY),
      });
      expect(accepted.status).toBe(202);
      const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
        last_by_subj: taskReceivedSubject('budgeted'),
      });
      expect(decodeJson(ReceivedTask, stored!.data, 'test').limits).toMatchObject(budget);
      const refused = await call(other.url, 'POST', '/v1/tasks', {
        body: { ...submission, limits: { max_total_tokens: 0 } },
        headers: bearer(TOKENS_KEY),
      });
      expect(refused.status).toBe(400);
      expect(ErrorBody.parse(refused.body).code).toBe('INVALID_REQUEST');
    } finally {
      await other.stop();
    }
  });
});
