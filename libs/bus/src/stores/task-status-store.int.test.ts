import { type TaskStatusRecord } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskStatusWriteError } from '../errors.js';
import { TaskStatusStore } from './task-status-store.js';

let nats: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

const record = (traceId: string, extra: Partial<TaskStatusRecord> = {}): TaskStatusRecord => ({
  trace_id: traceId,
  account_id: 'acme',
  workflow_id: 'w',
  status: 'queued',
  attempt: 0,
  updated_at: new Date().toISOString(),
  ...extra,
});

describe('task status store, when KV refuses a write for a reason other than a concurrent writer', () => {
  it('an update JetStream refuses (value over the bucket limit) reaches the caller as a coded error with its cause, after one try', async () => {
    const kv = await new Kvm(jetstream(nc)).create(`tasks_small_${Date.now()}`, { maxValueSize: 512 });
    const store = new TaskStatusStore(kv);
    const traceId = '1'.repeat(32);
    expect(await store.create(record(traceId))).toBe(true);
    let changes = 0;
    const error = await store
      .update('acme', traceId, (current) => {
        changes++;
        return { ...current!, error: { code: 'INTERNAL', message: 'x'.repeat(2_000) } };
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TaskStatusWriteError);
    expect(error).toMatchObject({ code: 'INTERNAL', retryable: false });
    expect((error as Error).cause).toBeInstanceOf(JetStreamApiError);
    expect((error as Error).message).toContain(`acme.${traceId}`);
    // Not taken for a lost compare-and-set: no retries.
    expect(changes).toBe(1);
  });

  it('an update from a known revision into a deleted bucket reaches the caller as a coded error with its cause', async () => {
    const name = `tasks_gone_${Date.now()}`;
    const kvm = new Kvm(jetstream(nc));
    const kv = await kvm.create(name);
    const store = new TaskStatusStore(kv);
    const traceId = '2'.repeat(32);
    await store.create(record(traceId));
    const running = await store.updateFrom('acme', traceId, (current) => ({
      ...current!,
      status: 'running',
    }));
    await (await jetstream(nc).jetstreamManager()).streams.delete(`KV_${name}`);
    const error = await store
      .updateFrom('acme', traceId, (current) => ({ ...current!, status: 'done' }), running)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TaskStatusWriteError);
    expect((error as TaskStatusWriteError).cause).toBeInstanceOf(Error);
  });

  it('a lost compare-and-set is still retried: a write in between is kept', async () => {
    const kv = await new Kvm(jetstream(nc)).create(`tasks_race_${Date.now()}`);
    const store = new TaskStatusStore(kv);
    const traceId = '3'.repeat(32);
    await store.create(record(traceId));
    const known = await store.updateFrom('acme', traceId, (current) => ({ ...current!, attempt: 1 }));
    await store.update('acme', traceId, (current) => ({ ...current!, status: 'running' }));
    const final = await store.updateFrom('acme', traceId, (current) => ({ ...current!, attempt: 2 }), known);
    expect(final?.record).toMatchObject({ status: 'running', attempt: 2 });
  });
});

describe('task status store, listing an account’s recent tasks', () => {
  it('when an account has more tasks than asked for, it gets its most recently written ones, newest first, and none of another account', async () => {
    const kv = await new Kvm(jetstream(nc)).create(`tasks_list_${Date.now()}`);
    const store = new TaskStatusStore(kv);
    const ids = ['a', 'b', 'c', 'd'].map((digit) => digit.repeat(32));
    for (const id of ids) expect(await store.create(record(id))).toBe(true);
    expect(await store.create(record('e'.repeat(32), { account_id: 'other' }))).toBe(true);
    // Writing the oldest task again makes it the most recent.
    await store.update('acme', ids[0]!, (current) => ({ ...current!, status: 'running', attempt: 1 }));

    const listed = await store.listRecent('acme', 3);

    expect(listed.map((task) => task.trace_id)).toEqual([ids[0], ids[3], ids[2]]);
    expect(listed[0]).toMatchObject({ status: 'running' });
    expect(await store.listRecent('nobody', 3)).toEqual([]);
  });
});

describe('task status store, a filtered listing', () => {
  it('when a filter matches fewer tasks than asked for, it returns the matching ones newest first, read only from the keys it may scan', async () => {
    const kv = await new Kvm(jetstream(nc)).create(`tasks_match_${Date.now()}`);
    const store = new TaskStatusStore(kv);
    const ids = ['a', 'b', 'c', 'd', 'e'].map((digit) => digit.repeat(32));
    for (const [index, id] of ids.entries()) {
      expect(await store.create(record(id, { status: index % 2 === 0 ? 'done' : 'error' }))).toBe(true);
    }
    expect(await store.create(record('f'.repeat(32), { account_id: 'other', status: 'done' }))).toBe(true);
    const done = (task: { status: string }) => task.status === 'done';

    expect((await store.listMatching('acme', 10, done, 100)).map((task) => task.trace_id)).toEqual([
      ids[4],
      ids[2],
      ids[0],
    ]);
    expect((await store.listMatching('acme', 2, done, 100)).map((task) => task.trace_id)).toEqual([
      ids[4],
      ids[2],
    ]);
    // Only the three newest keys are scanned: the oldest done task is not among them.
    expect((await store.listMatching('acme', 10, done, 3)).map((task) => task.trace_id)).toEqual([
      ids[4],
      ids[2],
    ]);
    expect(await store.listMatching('other', 10, () => false, 100)).toEqual([]);
  });
});
