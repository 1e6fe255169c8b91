/**
 * Scheduled runs end to end on a real NATS: two gateways in-process share one frozen clock that the test
 * moves across fire times. Each firing submits exactly one task (counted on the task stream) however
 * many gateways tick, across a restart, and when a claim is left behind by a gateway that died; firings
 * missed while no gateway ran follow the schedule's policy; pause, resume and run-now; bad input and
 * another account's schedule are refused.
 */
import { randomBytes } from 'node:crypto';
import { openMeshBuckets, ScheduleStore } from '@agentmesh/bus';
import { Streams, taskReceivedSubject } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  putSharedAgents,
  startTestGateway,
  type Json,
  type TestGateway,
} from '../__fixtures__/gateway-harness.js';
import { ManualClock } from '../__fixtures__/manual-clock.js';
import { scheduledIdempotencyKey } from './scheduler.js';

const KEYS = {
  acme: 'acme-key-schedules-0123456789abcd',
  beta: 'beta-key-schedules-0123456789abcd',
  gamma: 'gamma-key-schedules-0123456789abc',
  delta: 'delta-key-schedules-0123456789abc',
  other: 'other-key-schedules-0123456789abc',
} as const;
type Account = keyof typeof KEYS;

const ENV = {
  API_KEYS: Object.entries(KEYS)
    .map(([account, key]) => `${key}=${account}`)
    .join(','),
  SCHEDULE_MISFIRE_GRACE_MS: '60000',
  SCHEDULE_CLAIM_LEASE_MS: '30000',
  SCHEDULE_TICK_MS: '1000',
  // One mesh: every gateway has the same master key, from which idempotency request digests are keyed.
  CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
};

let nats: NatsServer;
let client: NatsConnection;
let jsm: JetStreamManager;
let store: ScheduleStore;
const vaultKeys = generateVaultKeyPair('executors-1');
const clock = new ManualClock('2026-06-01T07:59:30.000Z');
let gateways: TestGateway[] = [];

const startGateway = () => startTestGateway(nats.url, ENV, vaultKeys, { clock });

/** Moves the shared clock and waits for every running gateway's tick to end. */
async function moveTo(time: string): Promise<void> {
  clock.set(time);
  await Promise.all(gateways.map((gw) => gw.gateway.scheduler.settled()));
}

async function storedTasks(account: Account): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

const api = (account: Account, method: string, path: string, body?: unknown) =>
  call(gateways[0]!.url, method, path, {
    headers: bearer(KEYS[account]),
    ...(body === undefined ? {} : { body }),
  });

const everyMinute = (extra: Record<string, unknown> = {}) => ({
  cron: '* * * * *',
  timezone: 'Europe/Berlin',
  workflow_id: 'report_agent',
  input: { user_id: 'u-1', messages: [{ role: 'user', content: 'the daily report' }], variables: { day: 1 } },
  ...extra,
});

async function create(account: Account, body: Json): Promise<Json> {
  const created = await api(account, 'POST', '/v1/schedules', body);
  expect(created.status, created.text).toBe(201);
  return created.body;
}

beforeAll(async () => {
  nats = await startNats();
  await putSharedAgents(nats.url, 'report_agent');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
  const buckets = await openMeshBuckets(jetstream(client), { only: ['schedules', 'scheduleFirings'] });
  store = new ScheduleStore(buckets.schedules, buckets.scheduleFirings);
  gateways = [await startGateway(), await startGateway()];
  await moveTo('2026-06-01T07:59:30.000Z');
});
afterAll(async () => {
  for (const gw of gateways) await gw.stop();
  await client?.close();
  await nats?.stop();
});

describe('firings with two gateways on one clock', () => {
  it('when both gateways tick across five fire times and one restarts between, each fire time runs one task', async () => {
    const schedule = await create('acme', everyMinute());
    expect(schedule.next_fire_at).toBe('2026-06-01T08:00:00.000Z');

    await moveTo('2026-06-01T08:00:05.000Z');
    await moveTo('2026-06-01T08:01:05.000Z');
    expect(await storedTasks('acme')).toBe(2);

    // The second gateway restarts: a new instance on the same clock.
    await gateways[1]!.stop();
    gateways[1] = await startGateway();
    await gateways[1].gateway.scheduler.settled();

    await moveTo('2026-06-01T08:02:05.000Z');
    await moveTo('2026-06-01T08:03:05.000Z');
    await moveTo('2026-06-01T08:04:05.000Z');
    // Both tick again at the same time without moving on: nothing more.
    await Promise.all(gateways.map((gw) => gw.gateway.scheduler.tick()));
    expect(await storedTasks('acme')).toBe(5);

    const shown = await api('acme', 'GET', `/v1/schedules/${schedule.schedule_id}?next=3&runs=10`);
    expect(shown.status).toBe(200);
    const runs: Json[] = shown.body.last_runs;
    expect(runs.map((run) => run.fire_at)).toEqual([
      '2026-06-01T08:04:00.000Z',
      '2026-06-01T08:03:00.000Z',
      '2026-06-01T08:02:00.000Z',
      '2026-06-01T08:01:00.000Z',
      '2026-06-01T08:00:00.000Z',
    ]);
    expect(
      runs.every((run) => run.state === 'submitted' && run.kind === 'scheduled' && run.status === 'queued'),
    ).toBe(true);
    expect(new Set(runs.map((run) => run.trace_id)).size).toBe(5);
    expect(shown.body.next_fire_times).toEqual([
      '2026-06-01T08:05:00.000Z',
      '2026-06-01T08:06:00.000Z',
      '2026-06-01T08:07:00.000Z',
    ]);
    expect(shown.body.schedule.settled_through).toBe('2026-06-01T08:04:00.000Z');

    await api('acme', 'DELETE', `/v1/schedules/${schedule.schedule_id}`);
  });

  it('when a gateway died holding a claim, after the lease another submits it, and a submission that got through is not run twice', async () => {
    const schedule = await create('delta', everyMinute());
    const id: string = schedule.schedule_id;
    const fireAt = new Date('2026-06-01T08:05:00.000Z');
    const dead = {
      schedule_id: id,
      account_id: 'delta',
      fire_at: fireAt.toISOString(),
      kind: 'scheduled' as const,
      state: 'claimed' as const,
      claimed_at: '2026-06-01T08:05:01.000Z',
      claimed_by: 'gateway-that-died',
      idempotency_key: scheduledIdempotencyKey(id, fireAt),
    };
    expect(await store.claimFiring(String(fireAt.getTime()), dead)).toBeDefined();
    // It had submitted the task before dying, under the firing's idempotency key.
    const submitted = await api('delta', 'POST', '/v1/tasks', {
      workflow_id: 'report_agent',
      user_id: 'u-1',
      messages: [{ role: 'user', content: 'the daily report' }],
      variables: { day: 1 },
      idempotency_key: dead.idempotency_key,
    });
    expect(submitted.status).toBe(202);

    // Within the lease nobody touches it, and nothing after it is passed over.
    await moveTo('2026-06-01T08:05:20.000Z');
    expect((await store.getFiring('delta', id, String(fireAt.getTime())))?.firing.state).toBe('claimed');
    expect((await store.get('delta', id))?.schedule.settled_through).toBeUndefined();

    await moveTo('2026-06-01T08:05:40.000Z');
    const firing = (await store.getFiring('delta', id, String(fireAt.getTime())))?.firing;
    expect(firing, JSON.stringify(firing)).toMatchObject({ state: 'submitted' });
    expect(firing?.claimed_by).not.toBe('gateway-that-died');
    expect(firing?.trace_id).toBe(submitted.body.trace_id);
    expect(await storedTasks('delta')).toBe(1);

    await api('delta', 'DELETE', `/v1/schedules/${id}`);
  });
});

describe('fire times missed while no gateway ran', () => {
  it('when every gateway was down for ten fire times, skip runs none of them and run_once runs the newest once', async () => {
    await moveTo('2026-06-01T08:10:05.000Z');
    const skip = await create('beta', everyMinute({ missed_policy: 'skip' }));
    const once = await create('gamma', everyMinute({ missed_policy: 'run_once' }));
    await moveTo('2026-06-01T08:11:05.000Z');
    expect([await storedTasks('beta'), await storedTasks('gamma')]).toEqual([1, 1]);

    for (const gw of gateways) await gw.stop();
    gateways = [];
    clock.set('2026-06-01T08:21:30.000Z'); // 08:12 … 08:21 passed unseen; 08:21 is within the grace window
    gateways = [await startGateway()];
    await gateways[0]!.gateway.scheduler.settled();
    gateways.push(await startGateway());
    await gateways[1]!.gateway.scheduler.settled();

    // skip: only 08:21 (on time). run_once: 08:21 and one catch-up for 08:12 … 08:20 (the newest, 08:20).
    expect(await storedTasks('beta')).toBe(2);
    expect(await storedTasks('gamma')).toBe(3);
    const runs: Json[] = (await api('gamma', 'GET', `/v1/schedules/${once.schedule_id}`)).body.last_runs;
    expect(runs.slice(0, 3).map((run) => [run.fire_at, run.kind])).toEqual([
      ['2026-06-01T08:21:00.000Z', 'scheduled'],
      ['2026-06-01T08:20:00.000Z', 'missed'],
      ['2026-06-01T08:11:00.000Z', 'scheduled'],
    ]);

    await moveTo('2026-06-01T08:22:05.000Z');
    expect([await storedTasks('beta'), await storedTasks('gamma')]).toEqual([3, 4]);
    await api('beta', 'DELETE', `/v1/schedules/${skip.schedule_id}`);
    await api('gamma', 'DELETE', `/v1/schedules/${once.schedule_id}`);
  });
});

describe('pause, resume, run-now', () => {
  it('when paused nothing fires, the paused stretch is not caught up on resume, and run-now is idempotent by its key', async () => {
    const before = await storedTasks('acme');
    const schedule = await create('acme', everyMinute({ missed_policy: 'run_once' }));
    const id: string = schedule.schedule_id;
    const paused = await api('acme', 'POST', `/v1/schedules/${id}/pause`);
    expect(paused.body.paused).toBe(true);
    await moveTo('2026-06-01T08:23:05.000Z');
    await moveTo('2026-06-01T08:26:05.000Z');
    expect(await storedTasks('acme')).toBe(before);
    expect((await api('acme', 'GET', `/v1/schedules/${id}`)).body.next_fire_times).toEqual([]);

    const resumed = await api('acme', 'POST', `/v1/schedules/${id}/resume`);
    expect(resumed.body).toMatchObject({ paused: false, next_fire_at: '2026-06-01T08:27:00.000Z' });
    await moveTo('2026-06-01T08:27:05.000Z');
    expect(await storedTasks('acme')).toBe(before + 1);

    const first = await api('acme', 'POST', `/v1/schedules/${id}/run`, { idempotency_key: 'manual-1' });
    expect(first.status).toBe(202);
    const again = await api('acme', 'POST', `/v1/schedules/${id}/run`, { idempotency_key: 'manual-1' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true, trace_id: first.body.trace_id });
    const fresh = await api('acme', 'POST', `/v1/schedules/${id}/run`);
    expect(fresh.status).toBe(202);
    expect(fresh.body.trace_id).not.toBe(first.body.trace_id);
    expect(await storedTasks('acme')).toBe(before + 3);
    const kinds = (await api('acme', 'GET', `/v1/schedules/${id}`)).body.last_runs.map(
      (run: Json) => run.kind,
    );
    expect(kinds.filter((kind: string) => kind === 'manual')).toHaveLength(2);
    await api('acme', 'DELETE', `/v1/schedules/${id}`);
  });
});

describe('bad input and tenancy', () => {
  it.each([
    ['an invalid cron expression', everyMinute({ cron: '61 * * * *' }), /cron/],
    ['six cron fields', everyMinute({ cron: '0 * * * * *' }), /cron/],
    ['an unknown time zone', everyMinute({ timezone: 'Mars/Olympus' }), /time zone/],
    [
      'an interval of zero',
      everyMinute({ cron: undefined, timezone: undefined, interval_seconds: 0 }),
      /interval/,
    ],
    [
      'a negative interval',
      everyMinute({ cron: undefined, timezone: undefined, interval_seconds: -5 }),
      /interval/,
    ],
    ['both cron and interval', everyMinute({ interval_seconds: 60 }), /exactly one/],
    ['neither cron nor interval', everyMinute({ cron: undefined }), /exactly one/],
    ['an unknown missed policy', everyMinute({ missed_policy: 'twice' }), /missed_policy/],
    ['no messages', everyMinute({ input: { user_id: 'u', messages: [] } }), /messages/],
  ])('when a schedule has %s, it is 400 INVALID_REQUEST', async (_what, body, message) => {
    const answer = await api('acme', 'POST', '/v1/schedules', JSON.parse(JSON.stringify(body)));
    expect(answer.status, answer.text).toBe(400);
    expect(answer.body.code).toBe('INVALID_REQUEST');
    expect(answer.text).toMatch(message);
  });

  it('when a schedule names no agent of the account, it is 404 NOT_FOUND, pinned or not', async () => {
    for (const workflow of ['no_such_agent', 'no_such_agent@3']) {
      const answer = await api('acme', 'POST', '/v1/schedules', everyMinute({ workflow_id: workflow }));
      expect(answer.status).toBe(404);
      expect(answer.body.code).toBe('NOT_FOUND');
    }
  });

  it('when a schedule pins a version its agent does not keep, it is 404 NOT_FOUND naming the version, as a pinned task is', async () => {
    const answer = await api('acme', 'POST', '/v1/schedules', everyMinute({ workflow_id: 'report_agent@7' }));
    expect(answer.status, answer.text).toBe(404);
    expect(answer.body).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('version 7') });
    const task = await api('acme', 'POST', '/v1/tasks', {
      workflow_id: 'report_agent@7',
      user_id: 'u-1',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect({ status: task.status, code: task.body.code, message: task.body.message }).toEqual({
      status: answer.status,
      code: answer.body.code,
      message: answer.body.message,
    });
    const pinned = await create('acme', everyMinute({ workflow_id: 'report_agent@1', paused: true }));
    expect(pinned.workflow_id).toBe('report_agent@1');
    await api('acme', 'DELETE', `/v1/schedules/${pinned.schedule_id}`);
    const malformed = await api(
      'acme',
      'POST',
      '/v1/schedules',
      everyMinute({ workflow_id: 'report_agent@x' }),
    );
    expect(malformed.status).toBe(400);
  });

  it('when another account names a schedule, it is 404 for show, pause, resume, run and delete, and it is not listed', async () => {
    const schedule = await create('acme', everyMinute({ paused: true }));
    const id: string = schedule.schedule_id;
    for (const [method, path] of [
      ['GET', `/v1/schedules/${id}`],
      ['POST', `/v1/schedules/${id}/pause`],
      ['POST', `/v1/schedules/${id}/resume`],
      ['POST', `/v1/schedules/${id}/run`],
      ['DELETE', `/v1/schedules/${id}`],
    ] as const) {
      const answer = await api('other', method, path);
      expect(answer.status, `${method} ${path}`).toBe(404);
    }
    expect((await api('other', 'GET', '/v1/schedules')).body.schedules).toEqual([]);
    const mine = (await api('acme', 'GET', '/v1/schedules')).body.schedules.map((s: Json) => s.schedule_id);
    expect(mine).toContain(id);
    // Untouched: still paused, never run.
    const shown = await api('acme', 'GET', `/v1/schedules/${id}`);
    expect(shown.body.schedule.paused).toBe(true);
    expect(shown.body.last_runs).toEqual([]);
    expect((await api('acme', 'GET', '/v1/schedules/not-an-id')).status).toBe(400);
    expect((await call(gateways[0]!.url, 'GET', '/v1/schedules')).status).toBe(401);
  });
});

describe('schedules posting into a thread', () => {
  const newThread = async (account: Account): Promise<string> => {
    const created = await api(account, 'POST', '/v1/threads', {});
    expect(created.status, created.text).toBe(201);
    return created.body.thread_id;
  };

  it("when a schedule names a thread, its firing's task runs in that thread, and a firing while that run is active follows the thread's strategy", async () => {
    const threadId = await newThread('acme');
    const schedule = await create('acme', everyMinute({ thread_id: threadId, paused: true }));
    expect(schedule.thread_id).toBe(threadId);
    const ran = await api('acme', 'POST', `/v1/schedules/${schedule.schedule_id}/run`);
    expect(ran.status, ran.text).toBe(202);
    const status = await api('acme', 'GET', `/v1/tasks/${ran.body.trace_id}`);
    expect(status.body).toMatchObject({ thread_id: threadId, status: 'queued' });
    // The thread holds the firing's task as its run.
    const thread = await api('acme', 'GET', `/v1/threads/${threadId}`);
    expect(thread.status).toBe(200);
    expect(JSON.stringify(thread.body)).toContain(ran.body.trace_id);
    // That run is still active (no executor here): under the thread's default strategy, reject, the next
    // firing is refused CONFLICT and recorded so.
    const busy = await api('acme', 'POST', `/v1/schedules/${schedule.schedule_id}/run`);
    expect(busy.status, busy.text).toBe(409);
    expect(busy.body.code).toBe('CONFLICT');
    const shown = await api('acme', 'GET', `/v1/schedules/${schedule.schedule_id}`);
    expect(shown.body.last_runs.map((run: Json) => run.state).sort()).toEqual(['refused', 'submitted']);
    await api('acme', 'DELETE', `/v1/schedules/${schedule.schedule_id}`);
  });

  it("when a schedule names no thread of its account, create is 404 NOT_FOUND; another account's thread too", async () => {
    const theirs = await newThread('other');
    for (const threadId of ['no_such_thread', theirs]) {
      const answer = await api('acme', 'POST', '/v1/schedules', everyMinute({ thread_id: threadId }));
      expect(answer.status, answer.text).toBe(404);
      expect(answer.body).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining(threadId) });
    }
    expect((await api('acme', 'POST', '/v1/schedules', everyMinute({ thread_id: 'a.b' }))).status).toBe(400);
  });

  it('when the thread was deleted after create, a firing is recorded refused with NOT_FOUND and the next one is tried again', async () => {
    const threadId = await newThread('beta');
    const schedule = await create('beta', everyMinute({ thread_id: threadId, paused: true }));
    expect((await api('beta', 'DELETE', `/v1/threads/${threadId}`)).status).toBe(200);
    const before = await storedTasks('beta');
    for (const key of ['first', 'second']) {
      const ran = await api('beta', 'POST', `/v1/schedules/${schedule.schedule_id}/run`, {
        idempotency_key: key,
      });
      expect(ran.status, ran.text).toBe(404);
      expect(ran.body).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining(threadId) });
    }
    const shown = await api('beta', 'GET', `/v1/schedules/${schedule.schedule_id}`);
    expect(shown.body.last_runs).toHaveLength(2);
    for (const run of shown.body.last_runs as Json[]) {
      expect(run).toMatchObject({ state: 'refused', error: { code: 'NOT_FOUND' } });
      expect(run.trace_id).toBeUndefined();
    }
    expect(await storedTasks('beta')).toBe(before);
    // The gateway runs on: the schedule is still there, and a thread-less one still fires.
    const plain = await create('beta', everyMinute({ paused: true }));
    expect((await api('beta', 'POST', `/v1/schedules/${plain.schedule_id}/run`)).status).toBe(202);
    for (const id of [schedule.schedule_id, plain.schedule_id])
      await api('beta', 'DELETE', `/v1/schedules/${id}`);
  });
});

describe('DST, fired by the loop on the frozen clock', () => {
  const fired = async (account: Account, id: string): Promise<string[]> =>
    (await api(account, 'GET', `/v1/schedules/${id}?runs=20`)).body.last_runs
      .map((run: Json) => run.fire_at as string)
      .sort();

  it('when Europe/Berlin springs forward, a daily 02:30 fires once at 03:00 CEST; an every-30-minutes job runs on both passes of the repeated hour at fall-back', async () => {
    await moveTo('2027-03-27T12:00:00.000Z');
    const daily = await create('acme', everyMinute({ cron: '30 2 * * *' }));
    for (const time of [
      '2027-03-28T00:30:05.000Z', // 01:30 CET: nothing
      '2027-03-28T01:00:05.000Z', // 03:00 CEST: the first valid time after the gap
      '2027-03-28T01:30:05.000Z', // 03:30 CEST: nothing more that day
      '2027-03-29T00:30:05.000Z', // 02:30 CEST the next day
    ]) {
      await moveTo(time);
    }
    expect(await fired('acme', daily.schedule_id)).toEqual([
      '2027-03-28T01:00:00.000Z',
      '2027-03-29T00:30:00.000Z',
    ]);
    await api('acme', 'DELETE', `/v1/schedules/${daily.schedule_id}`);

    await moveTo('2027-10-30T23:50:00.000Z');
    const halfHourly = await create('acme', everyMinute({ cron: '*/30 * * * *' }));
    // 31 October 2027, 03:00 CEST → 02:00 CET: 02:00–03:00 local happens twice.
    for (const time of ['00:00', '00:30', '01:00', '01:30', '02:00'])
      await moveTo(`2027-10-31T${time}:05.000Z`);
    expect(await fired('acme', halfHourly.schedule_id)).toEqual([
      '2027-10-31T00:00:00.000Z', // 02:00 CEST
      '2027-10-31T00:30:00.000Z', // 02:30 CEST
      '2027-10-31T01:00:00.000Z', // 02:00 CET
      '2027-10-31T01:30:00.000Z', // 02:30 CET
      '2027-10-31T02:00:00.000Z', // 03:00 CET
    ]);
    await api('acme', 'DELETE', `/v1/schedules/${halfHourly.schedule_id}`);
  });

  it('when America/New_York falls back, a daily 01:30 fires once, at 01:30 EDT, not again at 01:30 EST; a weekday 08:00 stays 08:00 local', async () => {
    await moveTo('2027-11-06T12:00:00.000Z');
    const daily = await create('acme', everyMinute({ cron: '30 1 * * *', timezone: 'America/New_York' }));
    const weekdays = await create('acme', everyMinute({ cron: '0 8 * * 1-5', timezone: 'America/New_York' }));
    for (const time of [
      '2027-11-07T05:30:05.000Z', // 01:30 EDT
      '2027-11-07T06:30:05.000Z', // 01:30 EST: the same wall time again, not fired
      '2027-11-08T06:30:05.000Z', // 01:30 EST the next day
      '2027-11-08T13:00:05.000Z', // Monday 08:00 EST
    ]) {
      await moveTo(time);
    }
    expect(await fired('acme', daily.schedule_id)).toEqual([
      '2027-11-07T05:30:00.000Z',
      '2027-11-08T06:30:00.000Z',
    ]);
    expect(await fired('acme', weekdays.schedule_id)).toEqual(['2027-11-08T13:00:00.000Z']);
    await api('acme', 'DELETE', `/v1/schedules/${daily.schedule_id}`);
    await api('acme', 'DELETE', `/v1/schedules/${weekdays.schedule_id}`);
  });
});
