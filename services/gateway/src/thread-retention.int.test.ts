/**
 * A thread's retention as the gateway gives it: the caller's own, else its account's default
 * (THREAD_RETENTION_BY_ACCOUNT), else the deployment's (THREAD_DEFAULT_*); a bad one is a 400.
 */
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-retention-00112233';
const GLOBEX_KEY = 'globex-key-retention-4455667';

let nats: NatsServer;
let gw: TestGateway;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${ACME_KEY}=acme,${GLOBEX_KEY}=globex`,
    THREAD_DEFAULT_MAX_AGE_SECONDS: '86400',
    THREAD_RETENTION_BY_ACCOUNT: JSON.stringify({ globex: { max_turns: 5 } }),
  });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

describe('thread retention at creation', () => {
  it('when a thread is created without a retention, it gets its account default, else the deployment one; its own wins', async () => {
    const acme = await call(gw.url, 'POST', '/v1/threads', { headers: bearer(ACME_KEY), body: {} });
    expect(acme.status).toBe(201);
    expect(acme.body).toMatchObject({ retention: { max_age_seconds: 86_400 } });
    const globex = await call(gw.url, 'POST', '/v1/threads', { headers: bearer(GLOBEX_KEY), body: {} });
    expect(globex.body).toMatchObject({ retention: { max_turns: 5 } });
    const own = await call(gw.url, 'POST', '/v1/threads', {
      headers: bearer(GLOBEX_KEY),
      body: { retention: { max_turns: 2 } },
    });
    expect(own.body).toMatchObject({ retention: { max_turns: 2 } });
    const read = await call(gw.url, 'GET', `/v1/threads/${(own.body as { thread_id: string }).thread_id}`, {
      headers: bearer(GLOBEX_KEY),
    });
    expect(read.body).toMatchObject({ retention: { max_turns: 2 }, entries: [] });
  });

  it('when a retention is out of bounds or unknown, the thread is refused 400 and not created', async () => {
    for (const retention of [{ max_age_seconds: 0 }, { max_turns: 10_001 }, { forever: true }]) {
      const refused = await call(gw.url, 'POST', '/v1/threads', {
        headers: bearer(ACME_KEY),
        body: { thread_id: 'refused', retention },
      });
      expect(refused.status, JSON.stringify(retention)).toBe(400);
      expect(refused.body).toMatchObject({ code: 'INVALID_REQUEST' });
    }
    const missing = await call(gw.url, 'GET', '/v1/threads/refused', { headers: bearer(ACME_KEY) });
    expect(missing.status).toBe(404);
  });
});
