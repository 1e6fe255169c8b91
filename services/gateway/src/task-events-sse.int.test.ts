import type { TaskEvent } from '@agentmesh/protocol';
import { TaskEventWriter } from '@agentmesh/bus';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './testing/gateway-harness.js';
import { openSse, type SseConnection, type SseFrame } from './testing/sse-client.js';

const ACME_KEY = 'acme-key-sse-00112233445566778899';
const BETA_KEY = 'beta-key-sse-99887766554433221100';
const HEARTBEAT_MS = 40;

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${ACME_KEY}=acme,${BETA_KEY}=beta`,
    SSE_HEARTBEAT_MS: String(HEARTBEAT_MS),
  });
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

async function submitTask(): Promise<string> {
  const res = await call(gw.url, 'POST', '/v1/tasks', {
    body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
    headers: bearer(ACME_KEY),
  });
  expect(res.status).toBe(202);
  return res.body.trace_id;
}

async function writer(traceId: string): Promise<TaskEventWriter> {
  return TaskEventWriter.open(js, jsm, { accountId: 'acme', traceId, attempt: 1 });
}

const done = {
  message: 'ByteDance',
  steps: 1,
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  duration_ms: 5,
};

/** The next event frame, skipping heartbeats; undefined when the stream ended. */
async function nextEvent(sse: SseConnection): Promise<Extract<SseFrame, { kind: 'event' }> | undefined> {
  for (;;) {
    const { value, done: ended } = await sse.frames.next();
    if (ended) return undefined;
    if (value.kind === 'event') return value;
  }
}

async function remainingEvents(sse: SseConnection): Promise<Extract<SseFrame, { kind: 'event' }>[]> {
  const events = [];
  for (let event = await nextEvent(sse); event; event = await nextEvent(sse)) events.push(event);
  return events;
}

describe('task events over SSE', () => {
  it('replays every event from the start with id = seq, event = type, data = the event, and closes after the terminal event', async () => {
    const traceId = await submitTask();
    const events = await writer(traceId);
    const written: TaskEvent[] = [
      await events.emit('tool_start', { call_id: 'c1', tool: 'search', arguments: { keyword: 'ByteDance' } }),
      await events.emit('tool_result', {
        call_id: 'c1',
        tool: 'search',
        ok: true,
        result: { n: 1 },
        duration_ms: 3,
      }),
      await events.emit('message_chunk', { delta: 'Byte' }),
      await events.emit('done', done),
    ];

    const sse = await openSse(`${gw.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY));
    expect(sse.status).toBe(200);
    expect(sse.contentType).toContain('text/event-stream');
    const received = await remainingEvents(sse);
    expect(received).toEqual(
      written.map((event) => ({
        kind: 'event',
        id: String(event.seq),
        event: event.type,
        data: JSON.stringify(event),
      })),
    );
  });

  it('resumes after Last-Event-ID, follows live events, and ends after the terminal event', async () => {
    const traceId = await submitTask();
    const events = await writer(traceId);
    await events.emit('message_chunk', { delta: 'one ' });
    await events.emit('message_chunk', { delta: 'two ' });

    const sse = await openSse(`${gw.url}/v1/tasks/${traceId}/events`, {
      ...bearer(ACME_KEY),
      'last-event-id': '1',
    });
    const second = await nextEvent(sse);
    expect(second).toMatchObject({ id: '2', event: 'message_chunk' });
    expect(JSON.parse(second!.data).data).toEqual({ delta: 'two ' });

    await events.emit('message_chunk', { delta: 'three' });
    expect(await nextEvent(sse)).toMatchObject({ id: '3', event: 'message_chunk' });
    await events.emit('error', { code: 'CANCELLED', message: 'cancelled', retryable: false });
    expect(await remainingEvents(sse)).toEqual([expect.objectContaining({ id: '4', event: 'error' })]);
  });

  it('?last_event_id= resumes like the header, so a reconnect gets exactly the rest', async () => {
    const traceId = await submitTask();
    const events = await writer(traceId);
    for (const delta of ['a', 'b', 'c']) await events.emit('message_chunk', { delta });
    await events.emit('done', done);

    const first = await openSse(`${gw.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY));
    const seen = [await nextEvent(first), await nextEvent(first)];
    first.close();
    const rest = await openSse(
      `${gw.url}/v1/tasks/${traceId}/events?last_event_id=${seen[1]!.id}`,
      bearer(ACME_KEY),
    );
    const ids = [...seen, ...(await remainingEvents(rest))].map((event) => event!.id);
    expect(ids).toEqual(['1', '2', '3', '4']);
  });

  it('an idle stream gets heartbeat comments, and a client that disconnects stops the JetStream reader', async () => {
    const traceId = await submitTask();
    const subscriptions = async (): Promise<number> => {
      const connz = (await (await fetch(`${nats.monitorUrl}/connz?subs=1`)).json()) as {
        connections: { name?: string; subscriptions: number }[];
      };
      return connz.connections.find((c) => c.name === 'gateway-under-test')!.subscriptions;
    };
    const before = await subscriptions();

    const sse = await openSse(`${gw.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY));
    const pings: SseFrame[] = [];
    while (pings.length < 2) {
      const { value } = await sse.frames.next();
      expect(value).toEqual({ kind: 'comment', text: 'ping' });
      pings.push(value!);
    }
    expect(await subscriptions()).toBeGreaterThan(before);
    sse.close();
    await waitFor(async () => (await subscriptions()) === before, {
      description: 'the reader to unsubscribe',
    });
  });

  it("another account's task, an unknown task and a malformed Last-Event-ID are refused with the error body", async () => {
    const traceId = await submitTask();
    const theirs = await call(gw.url, 'GET', `/v1/tasks/${traceId}/events`, { headers: bearer(BETA_KEY) });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe('NOT_FOUND');
    const unknown = await call(gw.url, 'GET', `/v1/tasks/${'ef'.repeat(16)}/events`, {
      headers: bearer(ACME_KEY),
    });
    expect(unknown.status).toBe(404);
    const badResume = await call(gw.url, 'GET', `/v1/tasks/${traceId}/events`, {
      headers: { ...bearer(ACME_KEY), 'last-event-id': 'yesterday' },
    });
    expect(badResume.status).toBe(400);
    expect(badResume.body.code).toBe('INVALID_REQUEST');
    const anonymous = await call(gw.url, 'GET', `/v1/tasks/${traceId}/events`);
    expect(anonymous.status).toBe(401);
  });
});
