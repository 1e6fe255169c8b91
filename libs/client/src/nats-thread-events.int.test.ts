import { ensureMeshStreams, TaskEventWriter } from '@agentmesh/bus';
import { threadApiSubject, type TaskEvent } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followThreadEventsOverNats } from './nats-thread-events.js';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const ACCOUNT = 'acme';
const [T1, T2, T3, OTHER] = ['1', '2', '3', '9'].map((d) => d.repeat(32)) as [string, string, string, string];
/** What the stand-in for the gateway's threads API answers: the thread's runs so far. */
let runs = [T1, T2];
const createdAt = new Date(Date.now() - 60_000).toISOString();

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
  // The gateway's side of `mesh.gateway.threads.<account>`, as far as following needs it.
  nc.subscribe(threadApiSubject(ACCOUNT), {
    callback: (_error, msg) => {
      const request = msg.json<{ op: string; thread_id: string }>();
      msg.respond(
        JSON.stringify(
          request.thread_id === 't1'
            ? {
                thread_id: 't1',
                created_at: createdAt,
                updated_at: createdAt,
                metadata: {},
                strategy: 'reject',
                status: 'idle',
                queued_trace_ids: [],
                runs,
                entries: [],
                messages: [],
              }
            : { code: 'NOT_FOUND', message: 'no thread', retryable: false },
        ),
      );
    },
  });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

async function run(traceId: string): Promise<void> {
  const writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 1 });
  await writer.emit('message_chunk', { delta: traceId.slice(0, 1) });
  await writer.emit('done', {
    message: 'ok',
    steps: 1,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    duration_ms: 1,
  });
}

async function take(
  count: number,
  options: { afterId?: number } = {},
): Promise<{ id: number; event: TaskEvent }[]> {
  const stop = new AbortController();
  const seen: { id: number; event: TaskEvent }[] = [];
  try {
    for await (const item of followThreadEventsOverNats(
      nc,
      { accountId: ACCOUNT, threadId: 't1' },
      {
        ...options,
        signal: stop.signal,
      },
    )) {
      seen.push(item);
      if (seen.length === count) break;
    }
  } finally {
    stop.abort();
  }
  return seen;
}

describe('following a thread over NATS', () => {
  it("when the account's tasks interleave, only the thread's runs are yielded, in stream order, and a follow resumes after an id", async () => {
    await run(T1);
    await run(OTHER);
    await run(T2);
    const all = await take(4);
    expect(all.map(({ event }) => `${event.trace_id.slice(0, 1)}:${event.type}`)).toEqual([
      '1:message_chunk',
      '1:done',
      '2:message_chunk',
      '2:done',
    ]);
    const resumed = await take(2, { afterId: all[1]!.id });
    expect(resumed).toEqual(all.slice(2));
  });

  it('when a run joins the thread after the follow began, its events are yielded too', async () => {
    runs = [T1, T2, T3];
    await run(OTHER.replace(/9/g, '8'));
    await run(T3);
    const seen = await take(6);
    expect(seen.slice(4).map(({ event }) => event.trace_id)).toEqual([T3, T3]);
  });

  it("when the thread is not the account's, the follow fails with the gateway's NOT_FOUND", async () => {
    const follow = followThreadEventsOverNats(nc, { accountId: ACCOUNT, threadId: 'nope' });
    await expect(follow.next()).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
