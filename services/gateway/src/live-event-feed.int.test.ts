import { connect as connectTcp } from 'node:net';
import { encodeJson, EventStreamConflictError, TaskEventWriter } from '@agentmesh/bus';
import { sseEventName, Streams, taskEventLogSubject, taskKey, type TaskEvent } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import {
  jetstream,
  jetstreamManager,
  PubHeaders,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LiveEventFeed } from './live-event-feed.js';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';
import {
  nextEvent,
  openSse,
  remainingEvents,
  type SseConnection,
  type SseFrame,
} from './__fixtures__/sse-client.js';

const KEY = 'acme-key-feed-00112233445566778899';
const ACCOUNT = 'acme';
/** "A handful": the feed of each gateway alive in this file, never one per stream. */
const HANDFUL = 3;

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const running: TestGateway[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
});
afterEach(async () => {
  for (const gateway of running.splice(0)) await gateway.stop();
});
afterAll(async () => {
  await client?.close();
  await nats?.stop();
});

async function startGateway(env: Record<string, string> = {}, natsUrl = nats.url): Promise<TestGateway> {
  const gateway = await startTestGateway(natsUrl, { API_KEYS: `${KEY}=${ACCOUNT}`, ...env });
  await putSharedAgents(natsUrl, 'w');
  running.push(gateway);
  return gateway;
}

function feedOf(gateway: TestGateway): LiveEventFeed {
  const feed = gateway.gateway.liveEvents;
  if (!feed) throw new Error('the gateway runs without a live feed');
  return feed;
}

async function submitTask(gateway: TestGateway): Promise<string> {
  const res = await call(gateway.url, 'POST', '/v1/tasks', {
    body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
    headers: bearer(KEY),
  });
  expect(res.status).toBe(202);
  return res.body.trace_id;
}

function follow(gateway: TestGateway, traceId: string, lastEventId?: number): Promise<SseConnection> {
  return openSse(`${gateway.url}/v1/tasks/${traceId}/events`, {
    ...bearer(KEY),
    ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}),
  });
}

async function writer(traceId: string, attempt = 1, jsClient = js, manager = jsm): Promise<TaskEventWriter> {
  return TaskEventWriter.open(jsClient, manager, { accountId: ACCOUNT, traceId, attempt });
}

/** The SSE frames a client must receive for `events`. */
const framesOf = (events: TaskEvent[]): SseFrame[] =>
  events.map((event) => ({
    kind: 'event',
    id: String(event.seq),
    event: sseEventName(event.type),
    data: JSON.stringify(event),
  }));

const done = {
  message: 'finished',
  steps: 1,
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  duration_ms: 5,
};

async function eventConsumers(manager = jsm): Promise<string[]> {
  const names: string[] = [];
  for await (const info of manager.consumers.list(Streams.EVENTS.name)) names.push(info.name);
  return names;
}

/** Consumers reading exactly this task's events (a follower's own reader; the feed reads them all). */
async function consumersFollowing(traceId: string): Promise<number> {
  const subject = taskEventLogSubject(ACCOUNT, traceId);
  let count = 0;
  for await (const info of jsm.consumers.list(Streams.EVENTS.name)) {
    if ([info.config.filter_subject, ...(info.config.filter_subjects ?? [])].includes(subject)) count++;
  }
  return count;
}

async function inBatches<T>(count: number, size: number, make: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += size) {
    const batch = Array.from({ length: Math.min(size, count - start) }, (_, i) => make(start + i));
    results.push(...(await Promise.all(batch)));
  }
  return results;
}

describe('the live event feed', () => {
  it('when 2,000 SSE clients follow 200 tasks on one gateway, each gets every event once and in order, while MESH_EVENTS has only a handful of consumers', async () => {
    const TASKS = 200;
    const PER_TASK = 10;
    const gateway = await startGateway({ SSE_MAX_STREAMS: '2500', SSE_MAX_STREAMS_PER_CALLER: '2500' });
    const feed = feedOf(gateway);
    const traces = await inBatches(TASKS, 50, () => submitTask(gateway));
    const followers = await Promise.all(
      traces.flatMap((traceId) => Array.from({ length: PER_TASK }, () => follow(gateway, traceId))),
    );
    expect(followers.filter((sse) => sse.status === 200)).toHaveLength(TASKS * PER_TASK);
    await waitFor(() => feed.stats().followers === TASKS * PER_TASK, {
      timeoutMs: 30_000,
      description: 'every stream to follow the feed',
    });

    const consumers = await eventConsumers();
    expect(consumers.length).toBeLessThanOrEqual(HANDFUL);

    const written = new Map<string, TaskEvent[]>();
    await Promise.all(
      traces.map(async (traceId, index) => {
        const events = await writer(traceId);
        written.set(traceId, [
          await events.emit('message_chunk', { delta: `task ${index} ` }),
          await events.emit('message_chunk', { delta: 'says hi' }),
          await events.emit('done', { ...done, message: `task ${index} says hi` }),
        ]);
      }),
    );
    const received = await Promise.all(followers.map((sse) => remainingEvents(sse)));
    received.forEach((frames, index) => {
      const traceId = traces[Math.floor(index / PER_TASK)]!;
      expect(frames).toEqual(framesOf(written.get(traceId)!));
    });
    expect(feed.stats().streamReads).toBe(0);
  }, 120_000);

  it('followers that connect before, while and after their task writes its events, some resuming, each get every event after their Last-Event-ID once, in order', async () => {
    const TASKS = 100;
    const gateway = await startGateway({ SSE_MAX_STREAMS: '1500', SSE_MAX_STREAMS_PER_CALLER: '1500' });
    const traces = await inBatches(TASKS, 50, () => submitTask(gateway));
    await Promise.all(
      traces.map(async (traceId) => {
        const followers: { after: number; sse: Promise<SseConnection> }[] = [
          { after: 0, sse: follow(gateway, traceId) },
        ];
        const events = await writer(traceId);
        const written: TaskEvent[] = [];
        for (let i = 1; i <= 4; i++) {
          written.push(await events.emit('message_chunk', { delta: `part ${i} ` }));
          followers.push({ after: 0, sse: follow(gateway, traceId) });
          followers.push({ after: i - 1, sse: follow(gateway, traceId, i - 1) });
        }
        written.push(await events.emit('done', done));
        followers.push({ after: 2, sse: follow(gateway, traceId, 2) });
        for (const { after, sse } of followers) {
          expect(await remainingEvents(await sse)).toEqual(framesOf(written.slice(after)));
        }
      }),
    );
  }, 60_000);

  it('an idle stream served by the feed gets heartbeat comments, holds no JetStream consumer, and gives its place back when the client goes away', async () => {
    const gateway = await startGateway({ SSE_HEARTBEAT_MS: '40' });
    const feed = feedOf(gateway);
    const traceId = await submitTask(gateway);
    const sse = await follow(gateway, traceId);
    for (let pings = 0; pings < 2; pings++) {
      expect((await sse.frames.next()).value).toEqual({ kind: 'comment', text: 'ping' });
    }
    expect(feed.stats()).toMatchObject({ followers: 1, tasks: 1 });
    expect(await consumersFollowing(traceId)).toBe(0);

    sse.close();
    await waitFor(() => feed.stats().followers === 0, { description: 'the follower to leave' });
    // Its buffer held nothing: it goes with its last follower.
    expect(feed.stats().tasks).toBe(0);
  });

  it('when clients follow fresh tasks, the feed serves them without a stream info of MESH_EVENTS, whose subject filter walks every task the stream holds', async () => {
    const gateway = await startGateway();
    const feed = feedOf(gateway);
    // Requests to the JetStream API are plain messages: a core subscription sees each one.
    const infoRequests = client.subscribe(`$JS.API.STREAM.INFO.${Streams.EVENTS.name}`);
    let infos = 0;
    void (async () => {
      for await (const _ of infoRequests) infos++;
    })();
    await client.flush();
    const tasks = await Promise.all([0, 1, 2].map(() => submitTask(gateway)));
    const followers = await Promise.all(tasks.map((traceId) => follow(gateway, traceId)));
    const written = await Promise.all(
      tasks.map(async (traceId) => {
        const events = await writer(traceId);
        return [await events.emit('message_chunk', { delta: 'hi' }), await events.emit('done', done)];
      }),
    );
    for (const [index, sse] of followers.entries()) {
      expect(await remainingEvents(sse)).toEqual(framesOf(written[index]!));
    }
    // Every follower was served from memory (its buffer decided by a last-by-subject get), none read the
    // stream, and nobody asked for the stream's info.
    expect(feed.stats()).toMatchObject({ streamReads: 0 });
    await client.flush();
    infoRequests.unsubscribe();
    expect(infos).toBe(0);
  });

  it('a follower that connects after its task finished gets the full replay from the stream, whether the buffer expired or the gateway started after the task', async () => {
    const gateway = await startGateway({ SSE_BUFFER_FINISHED_TTL_MS: '50' });
    const feed = feedOf(gateway);
    const traceId = await submitTask(gateway);
    const events = await writer(traceId);
    const written = [
      await events.emit('tool_start', { call_id: 'c1', tool: 'search', arguments: { q: 'x' } }),
      await events.emit('message_chunk', { delta: 'answer' }),
      await events.emit('done', done),
    ];
    await waitFor(() => feed.stats().received === written.length && feed.stats().tasks === 0, {
      description: "the finished task's buffer to expire",
    });
    expect(await remainingEvents(await follow(gateway, traceId))).toEqual(framesOf(written));
    expect(feed.stats().streamReads).toBe(1);

    const later = await startGateway();
    expect(await remainingEvents(await follow(later, traceId))).toEqual(framesOf(written));
    expect(await remainingEvents(await follow(later, traceId, 1))).toEqual(framesOf(written.slice(1)));
    expect(feedOf(later).stats().streamReads).toBe(2);
  });

  it('on a gateway started mid-task, a follower reads the earlier events from the stream, then drops its consumer and follows the feed', async () => {
    const first = await startGateway();
    const traceId = await submitTask(first);
    const events = await writer(traceId);
    const written: TaskEvent[] = [
      await events.emit('message_chunk', { delta: 'one ' }),
      await events.emit('message_chunk', { delta: 'two ' }),
    ];
    const gateway = await startGateway();
    const sse = await follow(gateway, traceId);
    expect(await nextEvent(sse)).toEqual(framesOf(written)[0]);
    expect(await nextEvent(sse)).toEqual(framesOf(written)[1]);
    expect(await consumersFollowing(traceId)).toBe(1);
    // The feed vouches for the task from the first event it takes in.
    written.push(await events.emit('message_chunk', { delta: 'three ' }));
    expect(await nextEvent(sse)).toEqual(framesOf(written)[2]);
    await waitFor(async () => (await consumersFollowing(traceId)) === 0, {
      description: "the follower's own consumer to go",
    });
    expect(feedOf(gateway).stats().followers).toBe(1);

    written.push(await events.emit('done', done));
    expect(await remainingEvents(sse)).toEqual(framesOf(written.slice(3)));
    expect(feedOf(gateway).stats().streamReads).toBe(1);
  });

  it('Last-Event-ID resumes from memory while the task is buffered, and from the stream once its buffer was evicted', async () => {
    const gateway = await startGateway({ SSE_BUFFER_MAX_TASKS: '2' });
    const feed = feedOf(gateway);
    const traceId = await submitTask(gateway);
    const events = await writer(traceId);
    const written: TaskEvent[] = [];
    for (const delta of ['a', 'b', 'c']) written.push(await events.emit('message_chunk', { delta }));
    await waitFor(() => feed.stats().received === 3, { description: 'the feed to take the events in' });

    const resumed = await follow(gateway, traceId, 1);
    expect(await nextEvent(resumed)).toEqual(framesOf(written)[1]);
    expect(await nextEvent(resumed)).toEqual(framesOf(written)[2]);
    written.push(await events.emit('done', done));
    expect(await remainingEvents(resumed)).toEqual(framesOf(written.slice(3)));
    expect(feed.stats().streamReads).toBe(0);
    expect(await consumersFollowing(traceId)).toBe(0);

    // Two newer tasks take the buffer's two places.
    for (let i = 0; i < 2; i++) {
      const other = await writer(await submitTask(gateway));
      await other.emit('message_chunk', { delta: `other ${i}` });
    }
    await waitFor(() => feed.stats().received === 6, { description: 'the feed to take the events in' });
    expect(await remainingEvents(await follow(gateway, traceId, 2))).toEqual(framesOf(written.slice(2)));
    expect(feed.stats().streamReads).toBe(1);
  });

  it('events JetStream refuses — a stale attempt fenced off, a raw publish expecting the wrong last sequence — and a duplicate retry never reach an SSE client', async () => {
    const gateway = await startGateway();
    const feed = feedOf(gateway);
    const traceId = await submitTask(gateway);
    const live = await follow(gateway, traceId);
    await waitFor(() => feed.stats().followers === 1, { description: 'the stream to follow the feed' });

    const current = await writer(traceId, 1);
    const stale = await writer(traceId, 2);
    const written: TaskEvent[] = [await current.emit('message_chunk', { delta: 'real' })];
    await expect(stale.emit('message_chunk', { delta: 'stale attempt' })).rejects.toBeInstanceOf(
      EventStreamConflictError,
    );
    const subject = taskEventLogSubject(ACCOUNT, traceId);
    const forged = { ...written[0]!, seq: 2, attempt: 2, type: 'done', data: { ...done, message: 'forged' } };
    const fenced = natsHeaders();
    fenced.set(PubHeaders.ExpectedLastSubjectSequenceHdr, '0');
    await expect(js.publish(subject, encodeJson(forged), { headers: fenced })).rejects.toThrow();
    const retry = await js.publish(subject, encodeJson(written[0]), {
      msgID: `${taskKey(ACCOUNT, traceId)}:1:1`,
    });
    expect(retry.duplicate).toBe(true);
    written.push(await current.emit('done', done));

    expect(await remainingEvents(live)).toEqual(framesOf(written));
    expect(await remainingEvents(await follow(gateway, traceId))).toEqual(framesOf(written));
    expect(feed.stats().streamReads).toBe(0);
  });

  it("with small buffer limits, many tasks' events stay within the bounds, and followers of evicted or trimmed tasks still get every event via the stream", async () => {
    const limits = { tasks: 5, bytes: 4_000, taskBytes: 1_500 };
    const gateway = await startGateway({
      SSE_BUFFER_MAX_TASKS: String(limits.tasks),
      SSE_BUFFER_MAX_BYTES: String(limits.bytes),
      SSE_BUFFER_TASK_MAX_BYTES: String(limits.taskBytes),
    });
    const feed = feedOf(gateway);
    const watched = await submitTask(gateway);
    const sse = await follow(gateway, watched);
    await waitFor(() => feed.stats().followers === 1, { description: 'the stream to follow the feed' });
    const watchedEvents = await writer(watched);
    const written: TaskEvent[] = [await watchedEvents.emit('message_chunk', { delta: 'first' })];
    expect(await nextEvent(sse)).toEqual(framesOf(written)[0]);

    const TASKS = 40;
    // Four such events are more than a task may hold, three tasks' more than all may.
    const text = 'x'.repeat(300);
    await inBatches(TASKS, 10, async () => {
      const events = await writer(await submitTask(gateway));
      for (let i = 0; i < 3; i++) await events.emit('message_chunk', { delta: text });
      await events.emit('done', done);
    });
    const long = await submitTask(gateway);
    const longEvents = await writer(long);
    const longWritten: TaskEvent[] = [];
    for (let i = 0; i < 30; i++) longWritten.push(await longEvents.emit('message_chunk', { delta: text }));
    longWritten.push(await longEvents.emit('done', done));
    const total = 1 + TASKS * 4 + longWritten.length;
    await waitFor(() => feed.stats().received === total, { description: 'the feed to take the events in' });

    const stats = feed.stats();
    expect(stats.peakTasks).toBeLessThanOrEqual(limits.tasks);
    expect(stats.peakBytes).toBeLessThanOrEqual(limits.bytes);
    expect(stats.peakTaskBytes).toBeLessThanOrEqual(limits.taskBytes);
    expect(stats.bytes).toBeGreaterThan(0);
    expect(stats.bytes).toBeLessThanOrEqual(limits.bytes);

    // The long task's buffer lost its first events to its own bound: a follower from the start reads them.
    expect(await remainingEvents(await follow(gateway, long))).toEqual(framesOf(longWritten));
    // The watched task was evicted while its client waited: it reads on from the stream.
    written.push(await watchedEvents.emit('message_chunk', { delta: 'second' }));
    written.push(await watchedEvents.emit('done', done));
    expect(await remainingEvents(sse)).toEqual(framesOf(written.slice(1)));
    expect(feed.stats().streamReads).toBeGreaterThanOrEqual(2);
    expect(feed.stats().peakBytes).toBeLessThanOrEqual(limits.bytes);
  });

  it('a client too slow for what the buffer holds falls behind, reads the rest from the stream, and still gets every event once, in order', async () => {
    const limits = { bytes: 1024 * 1024, taskBytes: 256 * 1024 };
    const gateway = await startGateway({
      SSE_BUFFER_MAX_BYTES: String(limits.bytes),
      SSE_BUFFER_TASK_MAX_BYTES: String(limits.taskBytes),
    });
    const feed = feedOf(gateway);
    const traceId = await submitTask(gateway);
    const url = new URL(gateway.url);
    // A client that reads nothing until told to: the gateway's writes stall on the full socket.
    const socket = connectTcp({ host: url.hostname, port: Number(url.port) });
    socket.on('error', () => undefined);
    socket.pause();
    let text = '';
    socket.setEncoding('latin1');
    const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
    socket.write(
      `GET /v1/tasks/${traceId}/events HTTP/1.0\r\nHost: ${url.host}\r\nAuthorization: Bearer ${KEY}\r\n\r\n`,
    );
    await waitFor(() => feed.stats().followers === 1, { description: 'the stream to follow the feed' });

    // Far more than the socket buffers take (a few MB on loopback) plus what the buffer holds.
    const COUNT = 128;
    const events = await writer(traceId);
    const chunk = 'y'.repeat(64 * 1024);
    for (let i = 0; i < COUNT; i++) await events.emit('message_chunk', { delta: chunk });
    await events.emit('done', done);
    await waitFor(() => feed.stats().received === COUNT + 1, {
      description: 'the feed to take the events in',
    });
    expect(feed.stats().peakBytes).toBeLessThanOrEqual(limits.bytes);

    socket.on('data', (data: string) => (text += data));
    socket.resume();
    const response = await closed;
    expect(response.startsWith('HTTP/1.1 200')).toBe(true);
    const ids = [...response.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
    expect(ids).toEqual(Array.from({ length: COUNT + 1 }, (_, i) => i + 1));
    expect(response.trimEnd().endsWith('"duration_ms":5}}')).toBe(true);
    expect(feed.stats().streamReads).toBe(1);
  });

  it('when the feed stops, a follower it served carries on from the stream after its last event', async () => {
    const gateway = await startGateway();
    const feed = feedOf(gateway);
    const traceId = await submitTask(gateway);
    const sse = await follow(gateway, traceId);
    await waitFor(() => feed.stats().followers === 1, { description: 'the stream to follow the feed' });
    const events = await writer(traceId);
    const written: TaskEvent[] = [await events.emit('message_chunk', { delta: 'before' })];
    expect(await nextEvent(sse)).toEqual(framesOf(written)[0]);

    await feed.stop();
    expect(feed.stats()).toMatchObject({ live: false, tasks: 0, bytes: 0 });
    written.push(await events.emit('message_chunk', { delta: 'after' }));
    written.push(await events.emit('done', done));
    expect(await remainingEvents(sse)).toEqual(framesOf(written.slice(1)));
    expect(feed.stats().streamReads).toBe(1);
  });

  it("stopping the gateway ends the streams its feed serves and deletes the feed's consumer", async () => {
    const gateway = await startGateway();
    const feed = feedOf(gateway);
    const traceId = await submitTask(gateway);
    const streams = [await follow(gateway, traceId), await follow(gateway, traceId)];
    await waitFor(() => feed.stats().followers === 2, { description: 'both streams to follow the feed' });
    expect(await eventConsumers()).toHaveLength(1);

    await gateway.stop();
    running.splice(running.indexOf(gateway), 1);
    for (const sse of streams) expect(await remainingEvents(sse)).toEqual([]);
    expect(feed.stats()).toMatchObject({ live: false, followers: 0, tasks: 0 });
    expect(await eventConsumers()).toEqual([]);
  });

  it('when the NATS server is killed and restarted, the feed picks up where it was and its followers get every event live', async () => {
    const own = await startNats();
    try {
      const gateway = await startGateway({}, own.url);
      const feed = feedOf(gateway);
      const traceId = await submitTask(gateway);
      const sse = await follow(gateway, traceId);
      await waitFor(() => feed.stats().followers === 1, { description: 'the stream to follow the feed' });
      const nc = await connect({ servers: own.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
      try {
        const ownJs = jetstream(nc);
        const ownJsm = await jetstreamManager(nc);
        const events = await writer(traceId, 1, ownJs, ownJsm);
        const written: TaskEvent[] = [await events.emit('message_chunk', { delta: 'before' })];
        expect(await nextEvent(sse)).toEqual(framesOf(written)[0]);

        await own.kill();
        await own.restart();
        await waitFor(() => ownJsm.streams.info(Streams.EVENTS.name), {
          timeoutMs: 30_000,
          description: 'JetStream to answer again',
        });
        written.push(await events.emit('message_chunk', { delta: 'after' }));
        written.push(await events.emit('done', done));
        expect(await remainingEvents(sse)).toEqual(framesOf(written.slice(1)));
        expect(feed.stats()).toMatchObject({ live: true, streamReads: 0 });
        expect((await eventConsumers(ownJsm)).length).toBeLessThanOrEqual(HANDFUL);
      } finally {
        await nc.close();
      }
    } finally {
      for (const gateway of running.splice(0)) await gateway.stop();
      await own.stop();
    }
  }, 90_000);
});
