import {
  ApprovalState,
  newTraceId,
  RESUMED_PARK_HEADER,
  Streams,
  taskAssembledSubject,
  TaskStatus,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { openMeshBuckets, ParkedTaskStore, TaskStatusStore } from '@agentmesh/bus';
import { parkedTaskFixture, startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-99aa88bb77cc66dd55ee';
const BETA_KEY = 'beta-key-0a1b2c3d4e5f60718293';

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;
let parkedTasks: ParkedTaskStore;
let statuses: TaskStatusStore;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { API_KEYS: `${BETA_KEY}=beta`, ADMIN_API_KEYS: ADMIN_KEY });
  await putSharedAgents(nats.url, 'payments');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
  const buckets = await openMeshBuckets(jetstream(client), { only: ['parkedTasks', 'tasks'] });
  parkedTasks = new ParkedTaskStore(buckets.parkedTasks);
  statuses = new TaskStatusStore(buckets.tasks);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

/** Acts as a dedicated account, so each test has its own assembled-task subject to count. */
const asAccount = (account: string) => ({ ...bearer(ADMIN_KEY), 'x-account-id': account });

/** A task parked as an executor parks it: its entry in mesh_parked_tasks and status `waiting_approval`. */
async function seedParkedTask(
  accountId: string,
  callIds: string[],
  options: { ttlMs?: number } = {},
): Promise<string> {
  const traceId = newTraceId();
  await parkedTasks.park(parkedTaskFixture({ traceId, accountId, callIds, ...options }));
  await seedStatus(accountId, traceId, TaskStatus.WAITING_APPROVAL);
  return traceId;
}

async function seedStatus(accountId: string, traceId: string, status: TaskStatusRecord['status']) {
  const now = new Date().toISOString();
  await statuses.create({
    trace_id: traceId,
    account_id: accountId,
    workflow_id: 'payments',
    status,
    attempt: 1,
    submitted_at: now,
    updated_at: now,
  });
}

/** The tasks queued on the account's assembled subject (the re-queued parked ones). */
async function queuedTasks(accountId: string): Promise<number> {
  const subject = taskAssembledSubject(accountId);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

async function lastQueuedHeaders(accountId: string) {
  const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
    last_by_subj: taskAssembledSubject(accountId),
  });
  return stored!.header;
}

const decide = (account: string, traceId: string, callId: string, body: unknown) =>
  call(gw.url, 'POST', `/v1/tasks/${traceId}/approvals/${callId}`, { body, headers: asAccount(account) });

describe('deciding on a parked task’s tool call', () => {
  it('when the only pending call is approved, the reply says resumed, the record is approved and the task is queued once with the resumed-park header', async () => {
    const traceId = await seedParkedTask('appr-one', ['call_1']);
    const res = await decide('appr-one', traceId, 'call_1', { approve: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      trace_id: traceId,
      resumed: true,
      approvals: [{ call_id: 'call_1', state: ApprovalState.APPROVED, decided_at: expect.any(String) }],
    });
    const stored = await parkedTasks.get('appr-one', traceId);
    expect(stored?.parked.approvals[0]?.state).toBe(ApprovalState.APPROVED);
    expect(stored?.parked.resumed_at).toEqual(expect.any(String));
    expect(await queuedTasks('appr-one')).toBe(1);
    expect((await lastQueuedHeaders('appr-one')).get(RESUMED_PARK_HEADER)).toBe('1');
    // The executor that takes the task up owns its status; until then it still waits.
    expect((await statuses.get('appr-one', traceId))?.status).toBe(TaskStatus.WAITING_APPROVAL);
  });

  it('when one of two calls is decided, nothing is queued; when the second is denied with a comment, the task is queued once and the comment is kept but never logged', async () => {
    const traceId = await seedParkedTask('appr-two', ['call_a', 'call_b']);
    const first = await decide('appr-two', traceId, 'call_a', { approve: true });
    expect(first.status).toBe(200);
    expect(first.body.resumed).toBe(false);
    expect(await queuedTasks('appr-two')).toBe(0);

    const comment = 'not this vendor, secret-ish note 7f3a91';
    const second = await decide('appr-two', traceId, 'call_b', { approve: false, comment });
    expect(second.status).toBe(200);
    expect(second.body.resumed).toBe(true);
    expect(second.body.approvals).toEqual([
      expect.objectContaining({ call_id: 'call_a', state: ApprovalState.APPROVED }),
      expect.objectContaining({ call_id: 'call_b', state: ApprovalState.DENIED, comment }),
    ]);
    expect(await queuedTasks('appr-two')).toBe(1);
    expect(gw.logs.some((line) => line.includes('7f3a91'))).toBe(false);
    expect(
      gw.logs.some(
        (line) => line.includes('tool call approval decided') && line.includes('"comment_length":'),
      ),
    ).toBe(true);
  });

  it('when the same decision is sent again, it answers 200 with the current state and queues nothing more; a different decision is 409 naming the state', async () => {
    const traceId = await seedParkedTask('appr-repeat', ['call_1']);
    expect((await decide('appr-repeat', traceId, 'call_1', { approve: true, comment: 'ok' })).status).toBe(
      200,
    );
    const again = await decide('appr-repeat', traceId, 'call_1', { approve: true, comment: 'ok' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ resumed: true, approvals: [{ state: ApprovalState.APPROVED }] });
    expect(await queuedTasks('appr-repeat')).toBe(1);

    const changed = await decide('appr-repeat', traceId, 'call_1', { approve: false });
    expect(changed.status).toBe(409);
    expect(changed.body).toMatchObject({
      code: 'CONFLICT',
      detail: { call_id: 'call_1', state: 'approved' },
    });
    expect(changed.body.message).toContain('approved');
  });

  it('when the approval has expired, a decision is 409 naming expired and nothing is queued', async () => {
    const traceId = newTraceId();
    const parked = parkedTaskFixture({ traceId, accountId: 'appr-expired', callIds: ['call_1'] });
    await parkedTasks.park({
      ...parked,
      approvals: parked.approvals.map((approval) => ({ ...approval, state: ApprovalState.EXPIRED })),
      resumed_at: new Date().toISOString(),
    });
    await seedStatus('appr-expired', traceId, TaskStatus.WAITING_APPROVAL);
    const res = await decide('appr-expired', traceId, 'call_1', { approve: true });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'CONFLICT', detail: { state: 'expired' } });
    expect(await queuedTasks('appr-expired')).toBe(0);
  });

  it('when approve and deny of the same call race, exactly one wins (compare-and-set), the other is 409, and the task is queued once', async () => {
    const traceId = await seedParkedTask('appr-race', ['call_1']);
    const answers = await Promise.all([
      decide('appr-race', traceId, 'call_1', { approve: true }),
      decide('appr-race', traceId, 'call_1', { approve: false }),
      decide('appr-race', traceId, 'call_1', { approve: false, comment: 'no' }),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409]);
    const winner = answers.find((answer) => answer.status === 200)!;
    const stored = await parkedTasks.get('appr-race', traceId);
    expect(stored?.parked.approvals[0]?.state).toBe(winner.body.approvals[0].state);
    expect(await queuedTasks('appr-race')).toBe(1);
  });

  it('when another approval of the task expired and the task was queued, deciding a still-pending one is 409', async () => {
    const traceId = newTraceId();
    const parked = parkedTaskFixture({ traceId, accountId: 'appr-gone', callIds: ['call_1', 'call_2'] });
    await parkedTasks.park({
      ...parked,
      approvals: [{ ...parked.approvals[0]!, state: ApprovalState.EXPIRED }, parked.approvals[1]!],
      resumed_at: new Date().toISOString(),
    });
    await seedStatus('appr-gone', traceId, TaskStatus.WAITING_APPROVAL);
    const res = await decide('appr-gone', traceId, 'call_2', { approve: true });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'CONFLICT', detail: { call_id: 'call_2', state: 'pending' } });
    expect((await parkedTasks.get('appr-gone', traceId))?.parked.approvals[1]?.state).toBe('pending');
  });

  it('when the call is not one the task waits on, it is 404 NOT_FOUND', async () => {
    const traceId = await seedParkedTask('appr-unknown', ['call_1']);
    const res = await decide('appr-unknown', traceId, 'call_other', { approve: true });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('NOT_FOUND');
    expect((await parkedTasks.get('appr-unknown', traceId))?.parked.approvals[0]?.state).toBe('pending');
  });

  it('when the task is not parked (running), a decision is 409 CONFLICT naming its status', async () => {
    const traceId = newTraceId();
    await seedStatus('appr-running', traceId, TaskStatus.RUNNING);
    const res = await decide('appr-running', traceId, 'call_1', { approve: true });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'CONFLICT', detail: { status: 'running' } });
  });

  it.each([
    ['approve is missing', {}, 'approve'],
    ['approve is not a boolean', { approve: 'yes' }, 'approve'],
    ['an unknown field rides along', { approve: true, extra: 1 }, 'extra'],
    ['the comment is too long', { approve: true, comment: 'x'.repeat(2001) }, 'comment'],
  ])(
    'when %s, it is 400 INVALID_REQUEST with the zod issues and the approval stays pending',
    async (_, body, path) => {
      const traceId = await seedParkedTask('appr-bad', ['call_1']);
      const res = await decide('appr-bad', traceId, 'call_1', body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_REQUEST');
      expect(JSON.stringify(res.body.detail.issues)).toContain(path);
      expect((await parkedTasks.get('appr-bad', traceId))?.parked.approvals[0]?.state).toBe('pending');
    },
  );

  it("when another account's key decides, it is 404 like a missing task and the approval stays pending", async () => {
    const traceId = await seedParkedTask('acme', ['call_1']);
    const res = await call(gw.url, 'POST', `/v1/tasks/${traceId}/approvals/call_1`, {
      body: { approve: true },
      headers: bearer(BETA_KEY),
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('NOT_FOUND');
    const list = await call(gw.url, 'GET', `/v1/tasks/${traceId}/approvals`, { headers: bearer(BETA_KEY) });
    expect(list.status).toBe(404);
    expect((await parkedTasks.get('acme', traceId))?.parked.approvals[0]?.state).toBe('pending');
    expect(await queuedTasks('acme')).toBe(0);
  });
});

describe('listing a task’s approvals', () => {
  it('when the task is parked, GET lists its pending approvals with tool, reason and expiry', async () => {
    const traceId = await seedParkedTask('appr-list', ['call_1', 'call_2']);
    const res = await call(gw.url, 'GET', `/v1/tasks/${traceId}/approvals`, {
      headers: asAccount('appr-list'),
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      trace_id: traceId,
      resumed: false,
      approvals: [
        expect.objectContaining({
          call_id: 'call_1',
          tool: 'pay_invoice',
          state: 'pending',
          expires_at: expect.any(String),
        }),
        expect.objectContaining({ call_id: 'call_2', reason: 'amount above 1000', state: 'pending' }),
      ],
    });
  });

  it('when the task is not parked, GET answers an empty list', async () => {
    const traceId = newTraceId();
    await seedStatus('appr-list-none', traceId, TaskStatus.RUNNING);
    const res = await call(gw.url, 'GET', `/v1/tasks/${traceId}/approvals`, {
      headers: asAccount('appr-list-none'),
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ trace_id: traceId, approvals: [], resumed: false });
  });
});

describe('cancelling a parked task', () => {
  it('when a task waiting for approval is cancelled, its approvals are cancelled and it is queued once so an executor ends it', async () => {
    const traceId = await seedParkedTask('appr-cancel', ['call_1', 'call_2']);
    await decide('appr-cancel', traceId, 'call_1', { approve: true });
    const res = await call(gw.url, 'POST', `/v1/tasks/${traceId}/cancel`, {
      headers: asAccount('appr-cancel'),
    });
    expect(res.status).toBe(202);
    expect(res.body.cancel_requested_at).toEqual(expect.any(String));
    const stored = await parkedTasks.get('appr-cancel', traceId);
    expect(stored?.parked.approvals.map((approval) => approval.state)).toEqual(['approved', 'cancelled']);
    expect(stored?.parked.resumed_at).toEqual(expect.any(String));
    expect(await queuedTasks('appr-cancel')).toBe(1);
    expect((await lastQueuedHeaders('appr-cancel')).get(RESUMED_PARK_HEADER)).toBe('1');

    // Cancelling again queues nothing more; deciding after the cancel is 409 naming cancelled.
    expect(
      (await call(gw.url, 'POST', `/v1/tasks/${traceId}/cancel`, { headers: asAccount('appr-cancel') }))
        .status,
    ).toBe(202);
    expect(await queuedTasks('appr-cancel')).toBe(1);
    const late = await decide('appr-cancel', traceId, 'call_2', { approve: true });
    expect(late.status).toBe(409);
    expect(late.body.detail).toMatchObject({ state: 'cancelled' });
  });
});
