import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { newTraceId, type ReceivedTask, type ThreadTurnEntry } from '@agentmesh/protocol';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureMeshStreams, ensureThreadStream, openMeshBuckets } from '../resources.js';
import { ThreadStore } from './thread-store.js';
import { startThreadPromoter } from './thread-promoter.js';

let nats: NatsServer;
let nc: NatsConnection;
const stores: ThreadStore[] = [];
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
  // A short duplicate window is not settable below the default here; the fence is tested by a second id.
  await ensureThreadStream(jsm);
  // Two stores on two connections: two gateways or executors.
  for (let i = 0; i < 2; i++) {
    const own = await connect({ servers: nats.url });
    const { threads } = await openMeshBuckets(jetstream(own), { only: ['threads'] });
    stores.push(new ThreadStore(jetstream(own), await jetstreamManager(own), threads));
  }
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

function turn(traceId: string, text: string): ThreadTurnEntry {
  return {
    type: 'turn',
    trace_id: traceId,
    at: new Date().toISOString(),
    messages: [
      { role: 'user', content: text },
      { role: 'assistant', content: `re: ${text}` },
    ],
  };
}

function task(account: string, traceId: string): ReceivedTask {
  return {
    task_meta: {
      workflow_id: 'chat',
      trace_id: traceId,
      user_id: 'u',
      account_id: account,
      submitted_at: new Date().toISOString(),
      thread: { thread_id: 't1' },
    },
    input: { messages: [{ role: 'user', content: 'hi' }], variables: {} },
  };
}

describe('thread store', () => {
  it('when a turn is appended again by a redelivery, after another turn, or from another store, the thread holds it once', async () => {
    const [a, b] = stores as [ThreadStore, ThreadStore];
    await a.create('acme', 'once', {});
    const first = newTraceId();
    const second = newTraceId();
    const one = await a.appendTurn('acme', 'once', turn(first, 'one'), 0);
    expect(one?.duplicate).toBe(false);
    // Same msg id, same fence: the duplicate window drops it.
    expect((await b.appendTurn('acme', 'once', turn(first, 'one'), 0))?.duplicate).toBe(true);
    await a.appendTurn('acme', 'once', turn(second, 'two'), one!.seq);
    // A late attempt of the first run with its old fence: the fence fails, the turn is found after it.
    expect((await b.appendTurn('acme', 'once', turn(first, 'one'), 0))?.duplicate).toBe(true);
    const entries = await a.entries('acme', 'once');
    expect(entries.map((e) => (e.entry.type === 'turn' ? e.entry.trace_id : 'x'))).toEqual([first, second]);
  });

  it('when a thread keeps its last two turns, the older are not retained and one purge removes them; another thread keeps all', async () => {
    const [a] = stores as [ThreadStore];
    const record = await a.create('acme', 'short', { retention: { max_turns: 2 } });
    await a.create('acme', 'whole', {});
    let after = 0;
    let whole = 0;
    for (const text of ['1', '2', '3', '4']) {
      after = (await a.appendTurn('acme', 'short', turn(newTraceId(), text), after))!.seq;
      whole = (await a.appendTurn('acme', 'whole', turn(newTraceId(), text), whole))!.seq;
    }
    const kept = await a.retained('acme', 'short', record!);
    expect(kept.map(({ entry }) => (entry.type === 'turn' ? entry.messages[0]?.content : 'x'))).toEqual([
      '3',
      '4',
    ]);
    // Still stored until purged: only reading leaves them out.
    expect(await a.entries('acme', 'short')).toHaveLength(4);
    expect(await a.purgeExpired('acme', 'short', record!)).toBe(2);
    expect(await a.entries('acme', 'short')).toEqual(kept);
    expect(await a.purgeExpired('acme', 'short', record!)).toBe(0);
    expect(await a.entries('acme', 'whole')).toHaveLength(4);
  });

  it('when every turn of a thread is past its age and purged, the next turn is still appended once after it', async () => {
    const [a] = stores as [ThreadStore];
    let clock = new Date();
    const js = jetstream(nc);
    const { threads } = await openMeshBuckets(js, { only: ['threads'] });
    const aging = new ThreadStore(js, await jetstreamManager(nc), threads, () => clock);
    const record = (await aging.create('acme', 'aging', { retention: { max_age_seconds: 60 } }))!;
    const base = (await aging.appendTurn('acme', 'aging', turn(newTraceId(), 'old'), 0))!.seq;
    clock = new Date(clock.getTime() + 61_000);
    expect(await aging.retained('acme', 'aging', record)).toEqual([]);
    expect(await aging.purgeExpired('acme', 'aging', record)).toBe(1);
    // A writer that read the thread before the purge still fences on the old last sequence.
    const next = newTraceId();
    const appended = await a.appendTurn(
      'acme',
      'aging',
      { ...turn(next, 'new'), at: clock.toISOString() },
      base,
    );
    expect(appended?.duplicate).toBe(false);
    const left = await aging.retained('acme', 'aging', record);
    expect(left.map(({ entry }) => (entry.type === 'turn' ? entry.trace_id : 'x'))).toEqual([next]);
  });

  it('when two stores admit two runs on one idle thread at once, exactly one runs and the other is refused or queued', async () => {
    const [a, b] = stores as [ThreadStore, ThreadStore];
    const ended = async (): Promise<boolean> => false;
    for (const strategy of ['reject', 'enqueue'] as const) {
      const id = `race-${strategy}`;
      await a.create('acme', id, { strategy });
      const traces = [newTraceId(), newTraceId()];
      const outcomes = await Promise.all([
        a.admit('acme', id, { trace_id: traces[0]!, task: task('acme', traces[0]!) }, undefined, ended),
        b.admit('acme', id, { trace_id: traces[1]!, task: task('acme', traces[1]!) }, undefined, ended),
      ]);
      expect(outcomes.filter((o) => o.kind === 'run')).toHaveLength(1);
      expect(outcomes.filter((o) => o.kind === (strategy === 'reject' ? 'busy' : 'queued'))).toHaveLength(1);
    }
  });

  it('when the active run is released, the queued run becomes active and its task is published once', async () => {
    const [a, b] = stores as [ThreadStore, ThreadStore];
    await a.create('acme', 'queue', { strategy: 'enqueue' });
    const ended = async (): Promise<boolean> => false;
    const [first, second] = [newTraceId(), newTraceId()];
    expect(
      await a.admit('acme', 'queue', { trace_id: first, task: task('acme', first) }, undefined, ended),
    ).toEqual({
      kind: 'run',
    });
    expect(
      (await b.admit('acme', 'queue', { trace_id: second, task: task('acme', second) }, undefined, ended))
        .kind,
    ).toBe('queued');
    // Two releases at once (an executor and a stale-claim check): one promotion.
    const promoted = await Promise.all([
      a.release('acme', 'queue', first),
      b.release('acme', 'queue', first),
    ]);
    expect(promoted.filter((p) => p === second).length).toBeGreaterThanOrEqual(1);
    const record = (await a.get('acme', 'queue'))!.record;
    expect(record.active?.trace_id).toBe(second);
    expect(record.active?.task).toBeUndefined();
    expect(record.queue).toEqual([]);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info('MESH_TASKS', { subjects_filter: 'mesh.tasks.received.acme' });
    expect(info.state.messages).toBe(1);
  });

  it('when an executor frees a thread without publishing, a promoter watching the bucket publishes the promoted run once', async () => {
    const [a, b] = stores as [ThreadStore, ThreadStore];
    await a.create('acme', 'promoted', { strategy: 'enqueue' });
    const ended = async (): Promise<boolean> => false;
    const [first, second] = [newTraceId(), newTraceId()];
    await a.admit('acme', 'promoted', { trace_id: first, task: task('acme', first) }, undefined, ended);
    await a.admit('acme', 'promoted', { trace_id: second, task: task('acme', second) }, undefined, ended);
    expect(await b.release('acme', 'promoted', first, { publish: false })).toBe(second);
    expect((await a.get('acme', 'promoted'))!.record.active?.task).toBeDefined();
    const published: string[] = [];
    const { threads } = await openMeshBuckets(jetstream(nc), { only: ['threads'] });
    // Two gateways' promoters: the run is published by either, stored once.
    const promoters = [
      startThreadPromoter(threads, a, { onPublished: (_a, _t, trace) => published.push(trace) }),
      startThreadPromoter(threads, b, { onPublished: (_a, _t, trace) => published.push(trace) }),
    ];
    try {
      await waitFor(
        async () => (await a.get('acme', 'promoted'))!.record.active?.task === undefined || undefined,
        {
          timeoutMs: 10_000,
        },
      );
    } finally {
      for (const promoter of promoters) promoter.stop();
    }
    expect(published).toContain(second);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info('MESH_TASKS', { subjects_filter: 'mesh.tasks.received.acme' });
    // One from the earlier release test, one here.
    expect(info.state.messages).toBe(2);
  });

  it('when a claim is held by a run that has ended, a new run takes the thread', async () => {
    const [a] = stores as [ThreadStore];
    await a.create('acme', 'stale', {});
    const [dead, fresh] = [newTraceId(), newTraceId()];
    await a.admit(
      'acme',
      'stale',
      { trace_id: dead, task: task('acme', dead) },
      undefined,
      async () => false,
    );
    const outcome = await a.admit(
      'acme',
      'stale',
      { trace_id: fresh, task: task('acme', fresh) },
      'reject',
      async (_account, traceId) => traceId === dead,
    );
    expect(outcome).toEqual({ kind: 'run' });
  });

  it('when an account has more threads than a page, pages go newest first and the cursor reaches every one once', async () => {
    const [a] = stores as [ThreadStore];
    for (const id of ['p1', 'p2', 'p3']) await a.create('paging', id, {});
    const first = await a.list('paging', 2);
    expect(first.threads.map((t) => t.thread_id)).toEqual(['p3', 'p2']);
    expect(first.next_before).toBeDefined();
    const second = await a.list('paging', 2, first.next_before);
    expect(second.threads.map((t) => t.thread_id)).toEqual(['p1']);
    expect(second.next_before).toBeUndefined();
  });

  it('when another account names the thread, it finds nothing', async () => {
    const [a] = stores as [ThreadStore];
    await a.create('acme', 'mine', {});
    expect(await a.get('globex', 'mine')).toBeUndefined();
    expect((await a.list('globex', 10)).threads).toEqual([]);
    expect((await a.list('acme', 100)).threads.map((t) => t.thread_id)).toContain('mine');
  });
});
