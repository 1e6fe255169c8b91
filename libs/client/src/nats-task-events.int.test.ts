import { ensureMeshStreams, TaskEventWriter } from '@agentmesh/bus';
import {
  isTerminalEvent,
  Streams,
  taskEventLogSubject,
  taskEventsSubject,
  TaskTranscript,
  type TaskEvent,
} from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followTaskEventsOverNats } from './nats-task-events.js';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let traceCounter = 0;
const nextTrace = (): string => (++traceCounter).toString(16).padStart(32, 'c');
const ACCOUNT = 'acme';

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

const done = {
  message: 'ByteDance was founded in 2012.',
  steps: 1,
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  duration_ms: 5,
};

/** Writes a whole task as an executor does: chunks, a tool call, then `done`. */
async function runTask(traceId: string): Promise<TaskEvent[]> {
  const writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 1 });
  return [
    await writer.emit('message_chunk', { delta: 'Byte' }),
    await writer.emit('tool_start', { call_id: 'c1', tool: 'search', arguments: { q: 'ByteDance' } }),
    await writer.emit('tool_result', { call_id: 'c1', tool: 'search', ok: true, result: {}, duration_ms: 1 }),
    await writer.emit('message_chunk', { delta: 'Dance' }),
    await writer.emit('done', done),
  ];
}

async function collect(iterable: AsyncIterable<TaskEvent>): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

async function consumersOnEvents(): Promise<number> {
  return (await jsm.streams.info(Streams.EVENTS.name)).state.consumer_count;
}

describe('following a task over NATS (JetStream ordered consumer)', () => {
  it('a task a second attempt resumed mid-answer yields its attempt_started in order, and the transcript of what was followed is the final answer', async () => {
    const traceId = nextTrace();
    const followed = collect(followTaskEventsOverNats(nc, { accountId: ACCOUNT, traceId }));
    const first = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 1 });
    await first.emit('message_chunk', { delta: 'ByteDance was ' });
    await first.emit('message_chunk', { delta: 'foun' });
    const second = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 2 });
    await second.emit('attempt_started', {
      drop_text_after_seq: 1,
      resumed_steps: 0,
      resumed_tool_results: 0,
      rerun_call_ids: [],
    });
    await second.emit('message_chunk', { delta: 'founded in 2012.' });
    await second.emit('done', done);

    const events = await followed;
    expect(events.map((event) => [event.seq, event.attempt, event.type])).toEqual([
      [1, 1, 'message_chunk'],
      [2, 1, 'message_chunk'],
      [3, 2, 'attempt_started'],
      [4, 2, 'message_chunk'],
      [5, 2, 'done'],
    ]);
    const transcript = new TaskTranscript();
    for (const event of events) transcript.add(event);
    expect(transcript.answer).toBe(done.message);
  });

  it('a task that finished before the follower attached still yields every event, in order, once, and the follow ends', async () => {
    const traceId = nextTrace();
    const written = await runTask(traceId);

    const followed = await collect(
      followTaskEventsOverNats(nc, { eventsSubject: taskEventsSubject(ACCOUNT, traceId) }),
    );

    expect(followed).toEqual(written);
  });

  it('a follower attached before the task starts gets the events live, and ends after the terminal event', async () => {
    const traceId = nextTrace();
    const following = collect(followTaskEventsOverNats(nc, { accountId: ACCOUNT, traceId }));

    const written = await runTask(traceId);

    expect(await following).toEqual(written);
  });

  it('a publish JetStream refused (a stale attempt fenced off) reaches neither a core subscriber of the followed subject nor the follower', async () => {
    const traceId = nextTrace();
    const core = nc.subscribe(taskEventsSubject(ACCOUNT, traceId));
    await nc.flush();
    const writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 2 });
    const first = await writer.emit('message_chunk', { delta: 'from the live attempt' });
    const stale: TaskEvent = {
      trace_id: traceId,
      seq: 2,
      ts: new Date().toISOString(),
      attempt: 1,
      type: 'error',
      data: { code: 'INTERNAL', message: 'from a stale attempt', retryable: false },
    };
    // The stale attempt expects the task's stored subject to be empty: JetStream refuses it.
    await expect(
      js.publish(taskEventLogSubject(ACCOUNT, traceId), JSON.stringify(stale), {
        expect: { lastSubjectSequence: 0 },
      }),
    ).rejects.toThrow();
    const last = await writer.emit('done', done);

    const coreSeen: TaskEvent[] = [];
    for await (const message of core) {
      coreSeen.push(message.json<TaskEvent>());
      if (isTerminalEvent(coreSeen.at(-1)!)) break;
    }
    const followed = await collect(followTaskEventsOverNats(nc, { accountId: ACCOUNT, traceId }));

    expect(coreSeen).toEqual([first, last]);
    expect(followed).toEqual([first, last]);
  });

  it('resuming after a seq yields only the later events, and a stopped follow deletes its consumer', async () => {
    const traceId = nextTrace();
    const written = await runTask(traceId);
    const before = await consumersOnEvents();

    const later = await collect(
      followTaskEventsOverNats(nc, { accountId: ACCOUNT, traceId }, { afterSeq: 3 }),
    );
    const stop = new AbortController();
    const unfinished = nextTrace();
    const iterator = followTaskEventsOverNats(
      nc,
      { accountId: ACCOUNT, traceId: unfinished },
      { signal: stop.signal },
    );
    const waiting = iterator.next();
    stop.abort(new Error('enough'));

    expect(later).toEqual(written.slice(3));
    await expect(waiting).rejects.toThrow('enough');
    await waitFor(async () => (await consumersOnEvents()) === before, { timeoutMs: 10_000 });
  });

  it('when the caller closes its connection right after the terminal event (as the CLI does), the consumer is deleted all the same', async () => {
    const traceId = nextTrace();
    const written = await runTask(traceId);
    const before = await consumersOnEvents();
    const own = await connect({ servers: nats.url });

    const followed = await collect(followTaskEventsOverNats(own, { accountId: ACCOUNT, traceId }));
    await own.close();

    expect(followed).toEqual(written);
    await waitFor(async () => (await consumersOnEvents()) === before, { timeoutMs: 10_000 });
  });
});
