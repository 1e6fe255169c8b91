import {
  sseEventName,
  Streams,
  taskEventLogSubject,
  TaskTranscript,
  type TaskEvent,
} from '@agentmesh/protocol';
import { TaskEventWriter } from '@agentmesh/bus';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';
import { openSse, type SseConnection, type SseFrame } from './__fixtures__/sse-client.js';

const ACME_KEY = 'acme-key-sse-00112233445566778899';
const ACME_KEY_2 = 'acme-key-sse-2-aabbccddeeff0011';
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

async function submitTask(base = gw.url, key = ACME_KEY): Promise<string> {
  const res = await call(base, 'POST', '/v1/tasks', {
    body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
    headers: bearer(key),
  });
  expect(res.status).toBe(202);
  return res.body.trace_id;
}

async function writer(traceId: string, accountId = 'acme'): Promise<TaskEventWriter> {
  return TaskEventWriter.open(js, jsm, { accountId, traceId, attempt: 1 });
}

/** JetStream consumers on MESH_EVENTS reading the task's events. */
async function consumersFollowing(accountId: string, traceId: string): Promise<number> {
  const subject = taskEventLogSubject(accountId, traceId);
  let count = 0;
  for await (const info of jsm.consumers.list(Streams.EVENTS.name)) {
    if ([info.config.filter_subject, ...(info.config.filter_subjects ?? [])].includes(subject)) count++;
  }
  return count;
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

async function nextFrame(sse: SseConnection): Promise<SseFrame | undefined> {
  return (await sse.frames.next()).value ?? undefined;
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
        event: sseEventName(event.type),
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
    // Named task_error on the wire: EventSource keeps `error` for its own connection failures.
    expect(await remainingEvents(sse)).toEqual([
      expect.objectContaining({
        id: '4',
        event: 'task_error',
        data: expect.stringContaining('"type":"error"'),
      }),
    ]);
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

  it('a resumed attempt’s attempt_started reaches a live stream, a replay and a Last-Event-ID resume as `attempt_started`, and folding it makes the answer the final one', async () => {
    const traceId = await submitTask();
    const live = await openSse(`${gw.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY));
    const first = await writer(traceId);
    await first.emit('message_chunk', { delta: 'Byte' });
    await first.emit('message_chunk', { delta: 'Dan' });
    // The first attempt's executor dies; JetStream redelivers the task to a second attempt, which
    // voids the text after seq 1 and streams it again.
    const second = await TaskEventWriter.open(js, jsm, { accountId: 'acme', traceId, attempt: 2 });
    await second.emit('attempt_started', {
      drop_text_after_seq: 1,
      resumed_steps: 0,
      resumed_tool_results: 0,
      rerun_call_ids: [],
    });
    await second.emit('message_chunk', { delta: 'Dance' });
    await second.emit('done', done);

    const fold = (frames: Extract<SseFrame, { kind: 'event' }>[]): string => {
      const transcript = new TaskTranscript();
      for (const frame of frames) transcript.add(JSON.parse(frame.data) as TaskEvent);
      return transcript.answer;
    };
    const liveFrames = await remainingEvents(live);
    expect(liveFrames.map((frame) => [frame.id, frame.event])).toEqual([
      ['1', 'message_chunk'],
      ['2', 'message_chunk'],
      ['3', 'attempt_started'],
      ['4', 'message_chunk'],
      ['5', 'done'],
    ]);
    expect(JSON.parse(liveFrames[2]!.data)).toMatchObject({
      type: 'attempt_started',
      attempt: 2,
      data: { drop_text_after_seq: 1 },
    });
    expect(fold(liveFrames)).toBe(done.message);

    const replay = await remainingEvents(
      await openSse(`${gw.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY)),
    );
    expect(replay.map((frame) => frame.data)).toEqual(liveFrames.map((frame) => frame.data));
    const resumed = await remainingEvents(
      await openSse(`${gw.url}/v1/tasks/${traceId}/events`, { ...bearer(ACME_KEY), 'last-event-id': '2' }),
    );
    expect(resumed.map((frame) => frame.event)).toEqual(['attempt_started', 'message_chunk', 'done']);
    expect(fold([...liveFrames.slice(0, 2), ...resumed])).toBe(done.message);
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

  describe('with SSE_LIVE_FEED=false (every stream reads JetStream with a consumer of its own)', () => {
    let streamOnly: TestGateway;
    beforeAll(async () => {
      streamOnly = await startTestGateway(nats.url, {
        API_KEYS: `${ACME_KEY}=acme`,
        SSE_HEARTBEAT_MS: String(HEARTBEAT_MS),
        SSE_LIVE_FEED: 'false',
      });
    });
    afterAll(async () => {
      await streamOnly?.stop();
    });

    it('an idle stream gets heartbeat comments, and a client that disconnects stops the JetStream reader', async () => {
      const traceId = await submitTask(streamOnly.url);
      const subscriptions = async (): Promise<number> => {
        const connz = (await (await fetch(`${nats.monitorUrl}/connz?subs=1`)).json()) as {
          connections: { name?: string; subscriptions: number }[];
        };
        // Every gateway of this file has that name; only this one's subscriptions change here.
        return connz.connections
          .filter((c) => c.name === 'gateway-under-test')
          .reduce((sum, c) => sum + c.subscriptions, 0);
      };
      const before = await subscriptions();

      const sse = await openSse(`${streamOnly.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY));
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

    it('when the client goes away, the JetStream consumer of its stream is deleted', async () => {
      const traceId = await submitTask(streamOnly.url);
      const sse = await openSse(`${streamOnly.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY));
      expect(sse.status).toBe(200);
      await waitFor(async () => (await consumersFollowing('acme', traceId)) === 1, {
        description: 'the stream to have a consumer',
      });
      sse.close();
      await waitFor(async () => (await consumersFollowing('acme', traceId)) === 0, {
        description: 'the consumer to be deleted',
      });
    });
  });
});

describe('limits on open event streams', () => {
  const PER_CALLER = 2;
  const PER_GATEWAY = 3;
  const open: SseConnection[] = [];
  let capped: TestGateway | undefined;

  async function startCapped(env: Record<string, string> = {}): Promise<TestGateway> {
    capped = await startTestGateway(nats.url, {
      API_KEYS: `${ACME_KEY}=acme,${ACME_KEY_2}=acme,${BETA_KEY}=beta`,
      SSE_HEARTBEAT_MS: String(HEARTBEAT_MS),
      SSE_MAX_STREAMS_PER_CALLER: String(PER_CALLER),
      SSE_MAX_STREAMS: String(PER_GATEWAY),
      ...env,
    });
    return capped;
  }

  /** Each stream reads JetStream itself, so an open stream shows as a consumer. */
  const STREAM_READERS = { SSE_LIVE_FEED: 'false' };

  async function stream(url: string, key: string): Promise<SseConnection> {
    const sse = await openSse(url, bearer(key));
    open.push(sse);
    return sse;
  }

  /** A stream request expected to be refused: its status, Retry-After and body (a stream it got is dropped). */
  async function refusal(url: string, key: string) {
    const response = await fetch(url, { headers: bearer(key) });
    if (response.status === 200) {
      await response.body?.cancel();
      return { status: 200 };
    }
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: (await response.json()) as unknown,
    };
  }

  /** Opens a stream as soon as the caller has a free slot; every refusal before is a 429. */
  async function streamOnceFree(url: string, key: string): Promise<SseConnection> {
    return waitFor(
      async () => {
        const sse = await stream(url, key);
        if (sse.status === 200) return sse;
        expect(sse.status).toBe(429);
        sse.close();
        return undefined;
      },
      { description: 'a free slot' },
    );
  }

  afterEach(async () => {
    for (const sse of open.splice(0)) sse.close();
    await capped?.stop();
    capped = undefined;
  });

  it('beyond SSE_MAX_STREAMS_PER_CALLER for one API key, a stream is 429 RATE_LIMITED with Retry-After and gets no JetStream consumer; a client going away frees its slot', async () => {
    const gateway = await startCapped(STREAM_READERS);
    const traceId = await submitTask(gateway.url);
    const url = `${gateway.url}/v1/tasks/${traceId}/events`;
    const first = await stream(url, ACME_KEY);
    expect(first.status).toBe(200);
    expect((await stream(url, ACME_KEY)).status).toBe(200);
    await waitFor(async () => (await consumersFollowing('acme', traceId)) === PER_CALLER, {
      description: 'one consumer per stream',
    });

    expect(await refusal(url, ACME_KEY)).toEqual({
      status: 429,
      retryAfter: '5',
      body: {
        code: 'RATE_LIMITED',
        message: expect.stringContaining(`${PER_CALLER} event streams open`),
        detail: { scope: 'caller', limit: PER_CALLER },
      },
    });
    expect(await consumersFollowing('acme', traceId)).toBe(PER_CALLER);

    first.close();
    const reopened = await streamOnceFree(url, ACME_KEY);
    expect(await nextFrame(reopened)).toEqual({ kind: 'comment', text: 'ping' });
  });

  it('another key of the same account has a cap of its own, and beyond SSE_MAX_STREAMS for the gateway every caller gets 429 until a stream closes', async () => {
    const gateway = await startCapped(STREAM_READERS);
    const traceId = await submitTask(gateway.url);
    const url = `${gateway.url}/v1/tasks/${traceId}/events`;
    const streams = [await stream(url, ACME_KEY), await stream(url, ACME_KEY), await stream(url, ACME_KEY_2)];
    expect(streams.map((sse) => sse.status)).toEqual([200, 200, 200]);

    const betaTrace = await submitTask(gateway.url, BETA_KEY);
    expect(await refusal(`${gateway.url}/v1/tasks/${betaTrace}/events`, BETA_KEY)).toEqual({
      status: 429,
      retryAfter: '5',
      body: {
        code: 'RATE_LIMITED',
        message: expect.stringContaining('this gateway'),
        detail: { scope: 'gateway', limit: PER_GATEWAY },
      },
    });
    expect(await consumersFollowing('beta', betaTrace)).toBe(0);

    streams[0]!.close();
    const beta = await streamOnceFree(`${gateway.url}/v1/tasks/${betaTrace}/events`, BETA_KEY);
    expect(await nextFrame(beta)).toEqual({ kind: 'comment', text: 'ping' });
  });

  it("a stream that ends with its task's terminal event frees its slot", async () => {
    const gateway = await startCapped();
    const traceId = await submitTask(gateway.url, BETA_KEY);
    const url = `${gateway.url}/v1/tasks/${traceId}/events`;
    const streams = [await stream(url, BETA_KEY), await stream(url, BETA_KEY)];
    expect(streams.map((sse) => sse.status)).toEqual([200, 200]);
    expect((await refusal(url, BETA_KEY)).status).toBe(429);

    await (await writer(traceId, 'beta')).emit('done', done);
    for (const sse of streams)
      expect(await remainingEvents(sse)).toEqual([expect.objectContaining({ event: 'done' })]);
    // A new stream replays the finished task and ends.
    expect(await remainingEvents(await streamOnceFree(url, BETA_KEY))).toHaveLength(1);
  });

  it('stopping the gateway ends its open streams and gives their slots back', async () => {
    const gateway = await startCapped();
    const traceId = await submitTask(gateway.url);
    const url = `${gateway.url}/v1/tasks/${traceId}/events`;
    const streams = [await stream(url, ACME_KEY), await stream(url, ACME_KEY)];
    expect(streams.map((sse) => sse.status)).toEqual([200, 200]);

    await gateway.stop();
    capped = undefined;
    for (const sse of streams) expect(await remainingEvents(sse)).toEqual([]);
    const ended = await waitFor(
      () => {
        const lines = gateway.logs
          .map((line) => JSON.parse(line))
          .filter((line) => line.msg === 'event stream ended');
        return lines.length === streams.length && lines;
      },
      { description: 'both streams to log their end' },
    );
    expect(ended.map((line) => line.open_streams)).toEqual([1, 0]);
  });
});
