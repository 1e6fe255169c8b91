import { EventType, taskEventLogSubject, type TaskEvent } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStreamConflictError } from './errors.js';
import { ensureMeshStreams } from './resources.js';
import { followTaskEvents } from './task-event-reader.js';
import { TaskEventWriter } from './task-event-writer.js';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let traceCounter = 0;
const nextTrace = (): string => (++traceCounter).toString(16).padStart(32, 'a');
const account = 'acme';

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

async function readAll(traceId: string, afterSeq = 0): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, { accountId: account, traceId, afterSeq }))
    events.push(event);
  return events;
}

describe('task event streams', () => {
  it('two accounts running tasks with the same trace id each get their own events, none dropped as a duplicate', async () => {
    const traceId = nextTrace();
    for (const accountId of ['acme', 'globex']) {
      const writer = await TaskEventWriter.open(js, jsm, { accountId, traceId, attempt: 1 });
      await writer.emit(EventType.ERROR, {
        code: 'CANCELLED',
        message: `cancelled in ${accountId}`,
        retryable: false,
      });
    }
    for (const accountId of ['acme', 'globex']) {
      const events: TaskEvent[] = [];
      for await (const event of followTaskEvents(js, { accountId, traceId })) events.push(event);
      expect(events.map((e) => [e.seq, e.type, (e.data as { message: string }).message])).toEqual([
        [1, 'error', `cancelled in ${accountId}`],
      ]);
    }
  });

  it("a first attempt's writer starts without a look-up, and is refused when the task already has events", async () => {
    const traceId = nextTrace();
    const first = TaskEventWriter.first(js, { accountId: account, traceId, attempt: 1 });
    await first.emit(EventType.MESSAGE_CHUNK, { delta: 'one' });
    expect(first.seq).toBe(1);
    // A duplicate of the task delivered for the first time elsewhere must not write over it.
    const duplicate = TaskEventWriter.first(js, { accountId: account, traceId, attempt: 1 });
    await expect(duplicate.emit(EventType.MESSAGE_CHUNK, { delta: 'other' })).rejects.toBeInstanceOf(
      EventStreamConflictError,
    );
    await first.emit(EventType.DONE, {
      message: 'one',
      steps: 1,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      duration_ms: 1,
    });
    expect((await readAll(traceId)).map((event) => [event.seq, event.type])).toEqual([
      [1, 'message_chunk'],
      [2, 'done'],
    ]);
  });

  it('events get strictly increasing seq from 1, and a reader gets them in order up to the terminal one', async () => {
    const traceId = nextTrace();
    const writer = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 1 });
    await writer.emit(EventType.MESSAGE_CHUNK, { delta: 'Hel' });
    await writer.emit(EventType.MESSAGE_CHUNK, { delta: 'lo' });
    await writer.emit(EventType.DONE, {
      message: 'Hello',
      steps: 1,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      duration_ms: 5,
    });
    const events = await readAll(traceId);
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'message_chunk'],
      [2, 'message_chunk'],
      [3, 'done'],
    ]);
    expect(events.every((e) => e.trace_id === traceId && e.attempt === 1)).toBe(true);
    // The reader leaves no server-side consumer behind.
    await waitFor(async () => (await jsm.streams.info('MESH_EVENTS')).state.consumer_count === 0);
  });

  it('a reader resuming after seq N gets exactly the rest', async () => {
    const traceId = nextTrace();
    const writer = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 1 });
    for (const delta of ['a', 'b', 'c']) await writer.emit(EventType.MESSAGE_CHUNK, { delta });
    await writer.emit(EventType.ERROR, { code: 'CANCELLED', message: 'cancelled', retryable: false });
    expect((await readAll(traceId, 2)).map((e) => e.seq)).toEqual([3, 4]);
  });

  it('a live reader receives events written after it started', async () => {
    const traceId = nextTrace();
    const reading = readAll(traceId);
    const writer = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 1 });
    await writer.emit(EventType.TOOL_THINKING, { delta: 'hmm' });
    await writer.emit(EventType.ERROR, { code: 'INTERNAL', message: 'x', retryable: false });
    expect((await reading).map((e) => e.type)).toEqual(['tool_thinking', 'error']);
  });

  it('a redelivered task continues the seq of the crashed attempt, and sees an earlier terminal event', async () => {
    const traceId = nextTrace();
    const first = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 1 });
    await first.emit(EventType.MESSAGE_CHUNK, { delta: 'partial' });
    const second = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 2 });
    expect(second.seq).toBe(1);
    expect(second.terminal).toBeUndefined();
    const done = await second.emit(EventType.ERROR, { code: 'INTERNAL', message: 'x', retryable: false });
    expect(done).toMatchObject({ seq: 2, attempt: 2 });

    const third = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 3 });
    expect(third.terminal?.type).toBe('error');
    await expect(third.emit(EventType.MESSAGE_CHUNK, { delta: 'late' })).rejects.toThrow(/already ended/);
  });

  it('when two writers own the same task, the one that fell behind is refused with a conflict', async () => {
    const traceId = nextTrace();
    const one = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 1 });
    const two = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 2 });
    await one.emit(EventType.MESSAGE_CHUNK, { delta: 'one' });
    await expect(two.emit(EventType.MESSAGE_CHUNK, { delta: 'two' })).rejects.toBeInstanceOf(
      EventStreamConflictError,
    );
    const stored = await jsm.streams.getMessage('MESH_EVENTS', {
      last_by_subj: taskEventLogSubject(account, traceId),
    });
    expect(stored?.json<TaskEvent>()).toMatchObject({ seq: 1, attempt: 1 });
  });

  it('a reader stops when its signal aborts, even while no event arrives', async () => {
    const controller = new AbortController();
    const reading = (async () => {
      const seen: TaskEvent[] = [];
      for await (const e of followTaskEvents(js, {
        accountId: account,
        traceId: nextTrace(),
        signal: controller.signal,
      })) {
        seen.push(e);
      }
      return seen;
    })();
    controller.abort();
    expect(await reading).toEqual([]);
  });
});
