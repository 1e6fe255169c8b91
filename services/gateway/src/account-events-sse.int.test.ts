import { TaskEventWriter } from '@agentmesh/bus';
import type { TaskEvent } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';
import { nextEvent, openSse, type SseConnection } from './__fixtures__/sse-client.js';

const ACME_KEY = 'acme-key-tail-00112233445566778899';
const BETA_KEY = 'beta-key-tail-99887766554433221100';
const ADMIN_KEY = 'admin-key-tail-aabbccddeeff00112233';
const PER_CALLER = 2;

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let traceCounter = 0;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${ACME_KEY}=acme,${BETA_KEY}=beta`,
    ADMIN_API_KEYS: ADMIN_KEY,
    SSE_HEARTBEAT_MS: '50',
    SSE_MAX_STREAMS_PER_CALLER: String(PER_CALLER),
  });
  await putSharedAgents(nats.url, 'w');
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const nextTraceId = (): string => (++traceCounter).toString(16).padStart(32, 'a');

async function writer(accountId: string): Promise<TaskEventWriter & { traceId: string }> {
  const traceId = nextTraceId();
  return Object.assign(await TaskEventWriter.open(js, jsm, { accountId, traceId, attempt: 1 }), { traceId });
}

async function tail(path: string, headers: Record<string, string>): Promise<SseConnection> {
  const sse = await openSse(`${gw.url}${path}`, headers);
  expect(sse.status).toBe(200);
  expect(sse.contentType).toContain('text/event-stream');
  return sse;
}

async function nextTaskEvent(sse: SseConnection): Promise<TaskEvent> {
  const frame = await nextEvent(sse);
  expect(frame).toBeDefined();
  return JSON.parse(frame!.data) as TaskEvent;
}

const done = {
  message: 'ok',
  steps: 1,
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  duration_ms: 5,
};

describe('GET /v1/events (an account tail)', () => {
  it("an API key's tail gets every event of its account's tasks as they are stored, in order, and none of another account's", async () => {
    const sse = await tail('/v1/events', bearer(ACME_KEY));
    const first = await writer('acme');
    const theirs = await writer('beta');
    const second = await writer('acme');

    await first.emit('message_chunk', { delta: 'one' });
    await theirs.emit('message_chunk', { delta: 'secret of beta' });
    await second.emit('message_chunk', { delta: 'two' });
    await first.emit('done', done);
    await theirs.emit('done', done);
    await second.emit('done', done);

    const seen: TaskEvent[] = [];
    for (let i = 0; i < 4; i++) seen.push(await nextTaskEvent(sse));
    sse.close();
    expect(seen.map((event) => [event.trace_id, event.seq, event.type])).toEqual([
      [first.traceId, 1, 'message_chunk'],
      [second.traceId, 1, 'message_chunk'],
      [first.traceId, 2, 'done'],
      [second.traceId, 2, 'done'],
    ]);
  });

  it('an admin follows the account it names in ?account=, and an API key naming another account is 403', async () => {
    const sse = await tail('/v1/events?account=beta', bearer(ADMIN_KEY));
    const theirs = await writer('beta');
    await theirs.emit('message_chunk', { delta: 'for the admin' });
    expect(await nextTaskEvent(sse)).toMatchObject({
      trace_id: theirs.traceId,
      data: { delta: 'for the admin' },
    });
    sse.close();

    const refused = await call(gw.url, 'GET', '/v1/events?account=beta', { headers: bearer(ACME_KEY) });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('FORBIDDEN');
    const noAccount = await call(gw.url, 'GET', '/v1/events', { headers: bearer(ADMIN_KEY) });
    expect(noAccount.status).toBe(401);
    const badAccount = await call(gw.url, 'GET', '/v1/events?account=a.b', { headers: bearer(ADMIN_KEY) });
    expect(badAccount.status).toBe(400);
    const anonymous = await call(gw.url, 'GET', '/v1/events');
    expect(anonymous.status).toBe(401);
  });

  it('tails count against SSE_MAX_STREAMS_PER_CALLER like task streams, and a closed tail gives its slot back', async () => {
    const open = [await tail('/v1/events', bearer(BETA_KEY)), await tail('/v1/events', bearer(BETA_KEY))];
    const refused = await call(gw.url, 'GET', '/v1/events', { headers: bearer(BETA_KEY) });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      code: 'RATE_LIMITED',
      detail: { scope: 'caller', limit: PER_CALLER },
    });
    expect(refused.headers['retry-after']).toBe('5');

    open[0]!.close();
    // The slot frees when the gateway sees the connection close; until then a retry is still 429.
    let again: SseConnection | undefined;
    while (again === undefined) {
      const attempt = await openSse(`${gw.url}/v1/events`, bearer(BETA_KEY));
      if (attempt.status === 200) again = attempt;
      else {
        expect(attempt.status).toBe(429);
        attempt.close();
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    again.close();
    open[1]!.close();
  });

  it('with SSE_LIVE_FEED=false the tail is refused SERVICE_UNAVAILABLE (502), saying it needs the live feed', async () => {
    const streamOnly = await startTestGateway(nats.url, {
      API_KEYS: `${ACME_KEY}=acme`,
      SSE_LIVE_FEED: 'false',
    });
    try {
      const refused = await call(streamOnly.url, 'GET', '/v1/events', { headers: bearer(ACME_KEY) });
      expect(refused.status).toBe(502);
      expect(refused.body).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('SSE_LIVE_FEED'),
      });
    } finally {
      await streamOnly.stop();
    }
  });
});
