import { EventType } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureMeshStreams } from './resources.js';
import { readTaskEventLog } from './task-event-log.js';
import { TaskEventWriter } from './task-event-writer.js';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
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

describe('reading a task event log', () => {
  it("reads only the task's own events, in order, up to the given seq, though other tasks' events sit between them", async () => {
    const mine = 'b'.repeat(32);
    const other = 'c'.repeat(32);
    const writer = TaskEventWriter.first(js, { accountId: account, traceId: mine, attempt: 1 });
    const neighbour = TaskEventWriter.first(js, { accountId: account, traceId: other, attempt: 1 });
    for (const delta of ['one', 'two', 'three', 'four']) {
      await writer.emit(EventType.MESSAGE_CHUNK, { delta });
      await neighbour.emit(EventType.MESSAGE_CHUNK, { delta: `other ${delta}` });
    }

    const events = await readTaskEventLog(jsm, { accountId: account, traceId: mine, throughSeq: 3 });

    expect(events.map((event) => [event.seq, event.trace_id, event.data])).toEqual([
      [1, mine, { delta: 'one' }],
      [2, mine, { delta: 'two' }],
      [3, mine, { delta: 'three' }],
    ]);
  });

  it('a task with no stored event has an empty log', async () => {
    const events = await readTaskEventLog(jsm, {
      accountId: account,
      traceId: 'd'.repeat(32),
      throughSeq: 5,
    });
    expect(events).toEqual([]);
  });
});
