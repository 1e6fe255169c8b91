/**
 * `/v1/admin/dead-letters` on a real NATS server: letters as the executor stores them (DeadLetterStore),
 * read, re-driven and dropped through the gateway, each account confined to its own.
 */
import { DeadLetterStore, deadLetterOf, TaskStatusStore, openMeshBuckets } from '@agentmesh/bus';
import {
  DeadLetterList,
  DeadLetterRedriveReply,
  DeadLetterView,
  deadLetterSubject,
  ErrorBody,
  newTraceId,
  ReceivedTask,
  Streams,
  taskReceivedSubject,
  type AssembledTask,
} from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-dead-letters-0123456789';
const admin = bearer(ADMIN_KEY);
const asAccount = (accountId: string) => ({ ...admin, 'x-account-id': accountId });

let nats: NatsServer;
let gw: TestGateway;
let nc: NatsConnection;
let store: DeadLetterStore;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { ADMIN_API_KEYS: ADMIN_KEY });
  await putSharedAgents(nats.url, 'weather');
  nc = await connect({ servers: nats.url });
  store = new DeadLetterStore(jetstream(nc), await jetstreamManager(nc));
}, 120_000);
afterAll(async () => {
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

/** A dead letter as the executor stores it for a task that ran out of deliveries. */
async function deadTask(
  accountId: string,
  workflowId = 'weather',
  user = 'weather in Oslo?',
): Promise<string> {
  const traceId = newTraceId();
  const task = {
    task_meta: {
      workflow_id: workflowId,
      trace_id: traceId,
      user_id: 'u-7',
      account_id: accountId,
      account_type: 'user',
      submitted_at: new Date().toISOString(),
    },
    input: { messages: [{ role: 'user', content: user }], variables: { city: 'Oslo' } },
    limits: { max_steps: 5 },
  } as unknown as AssembledTask;
  await store.add(
    deadLetterOf(task, {
      reason: { code: 'MAX_DELIVER_EXCEEDED', message: 'the task was delivered 4 times without finishing' },
      attempts: 4,
      source: 'executor',
    }),
  );
  return traceId;
}

describe('/v1/admin/dead-letters', () => {
  it("an account admin lists and shows its own dead letters with an input summary, filtered by workflow; another account's is a 404", async () => {
    const weather = await deadTask('acme', 'weather');
    const news = await deadTask('acme', 'news', 'headlines please');
    const foreign = await deadTask('globex', 'weather');

    const listed = await call(gw.url, 'GET', '/v1/admin/dead-letters', { headers: asAccount('acme') });
    expect(listed.status).toBe(200);
    const traces = DeadLetterList.parse(listed.body).dead_letters.map((letter) => letter.trace_id);
    expect(traces).toEqual(expect.arrayContaining([weather, news]));
    expect(traces).not.toContain(foreign);

    const filtered = await call(gw.url, 'GET', '/v1/admin/dead-letters?workflow_id=news&limit=5', {
      headers: asAccount('acme'),
    });
    expect(DeadLetterList.parse(filtered.body).dead_letters.map((letter) => letter.trace_id)).toEqual([news]);

    const shown = await call(gw.url, 'GET', `/v1/admin/dead-letters/${weather}`, {
      headers: asAccount('acme'),
    });
    expect(shown.status).toBe(200);
    expect(DeadLetterView.parse(shown.body)).toMatchObject({
      trace_id: weather,
      account_id: 'acme',
      workflow_id: 'weather',
      user_id: 'u-7',
      reason: { code: 'MAX_DELIVER_EXCEEDED' },
      attempts: 4,
      input_summary: { message_count: 1, last_user_message: 'weather in Oslo?', variable_names: ['city'] },
    });
    expect(shown.body).not.toHaveProperty('input');

    const other = await call(gw.url, 'GET', `/v1/admin/dead-letters/${foreign}`, {
      headers: asAccount('acme'),
    });
    expect(other.status).toBe(404);
    expect(ErrorBody.parse(other.body).code).toBe('NOT_FOUND');
    expect(
      (await call(gw.url, 'DELETE', `/v1/admin/dead-letters/${foreign}`, { headers: asAccount('acme') }))
        .status,
    ).toBe(404);
    expect(
      (
        await call(gw.url, 'POST', `/v1/admin/dead-letters/${foreign}/redrive`, {
          headers: asAccount('acme'),
        })
      ).status,
    ).toBe(404);

    // An admin naming no account sees every account's letters and finds one by its trace id alone.
    const everyone = await call(gw.url, 'GET', '/v1/admin/dead-letters?limit=500', { headers: admin });
    expect(DeadLetterList.parse(everyone.body).dead_letters.map((letter) => letter.trace_id)).toContain(
      foreign,
    );
    expect((await call(gw.url, 'GET', `/v1/admin/dead-letters/${foreign}`, { headers: admin })).status).toBe(
      200,
    );
  });

  it('a re-drive submits the original request as a new queued task, marks the letter, and a second re-drive is a 409', async () => {
    const dead = await deadTask('acme', 'weather', 'redrive me');
    const redriven = await call(gw.url, 'POST', `/v1/admin/dead-letters/${dead}/redrive`, {
      headers: asAccount('acme'),
    });
    expect(redriven.status).toBe(202);
    const reply = DeadLetterRedriveReply.parse(redriven.body);
    expect(reply.redriven_from).toBe(dead);
    expect(reply.trace_id).not.toBe(dead);

    const buckets = await openMeshBuckets(jetstream(nc), { only: ['tasks'] });
    const status = await new TaskStatusStore(buckets.tasks).get('acme', reply.trace_id);
    expect(status).toMatchObject({ status: 'queued', workflow_id: 'weather' });
    // The only task this file submits: the re-drive, stored in MESH_TASKS before the gateway answered.
    const stored = await (
      await jetstreamManager(nc)
    ).streams.getMessage(Streams.TASKS.name, {
      last_by_subj: taskReceivedSubject('acme'),
    });
    const task = ReceivedTask.parse(stored?.json());
    expect(task.task_meta.trace_id).toBe(reply.trace_id);
    expect(task).toMatchObject({
      task_meta: { account_id: 'acme', workflow_id: 'weather', user_id: 'u-7', account_type: 'user' },
      input: { messages: [{ role: 'user', content: 'redrive me' }], variables: { city: 'Oslo' } },
    });
    expect(task.runtime_config).toBeUndefined();

    const shown = await call(gw.url, 'GET', `/v1/admin/dead-letters/${dead}`, { headers: asAccount('acme') });
    expect(DeadLetterView.parse(shown.body).redriven).toMatchObject({ trace_id: reply.trace_id });
    const again = await call(gw.url, 'POST', `/v1/admin/dead-letters/${dead}/redrive`, {
      headers: asAccount('acme'),
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'CONFLICT', detail: { redriven_to: reply.trace_id } });
  });

  it('a dropped letter is gone: 204, then 404; a malformed trace id is a 400', async () => {
    const dead = await deadTask('acme');
    expect(
      (await call(gw.url, 'DELETE', `/v1/admin/dead-letters/${dead}`, { headers: asAccount('acme') })).status,
    ).toBe(204);
    expect(
      (await call(gw.url, 'GET', `/v1/admin/dead-letters/${dead}`, { headers: asAccount('acme') })).status,
    ).toBe(404);
    const bad = await call(gw.url, 'GET', '/v1/admin/dead-letters/not-a-trace', {
      headers: asAccount('acme'),
    });
    expect(bad.status).toBe(400);
    expect(ErrorBody.parse(bad.body).code).toBe('INVALID_REQUEST');
  });

  it('when a message on an account letter subject does not fit the schema, the listing skips and counts it and the gateway logs it; show and redrive are 422 MALFORMED_RECORD; delete drops it', async () => {
    const account = 'messy';
    const good = await deadTask(account);
    const bad = newTraceId();
    await jetstream(nc).publish(
      deadLetterSubject(account, bad),
      JSON.stringify({ trace_id: bad, oops: true }),
    );

    const listed = await call(gw.url, 'GET', '/v1/admin/dead-letters', { headers: asAccount(account) });
    expect(listed.status).toBe(200);
    expect(DeadLetterList.parse(listed.body)).toMatchObject({ skipped_malformed: 1 });
    expect(listed.body.dead_letters.map((letter: { trace_id: string }) => letter.trace_id)).toEqual([good]);
    expect(gw.logs.some((line) => line.includes('"skipped_malformed":1') && line.includes(bad))).toBe(true);
    const everyone = await call(gw.url, 'GET', '/v1/admin/dead-letters', { headers: admin });
    expect(everyone.status).toBe(200);
    expect(everyone.body.skipped_malformed).toBeGreaterThanOrEqual(1);

    for (const [method, path] of [
      ['GET', `/v1/admin/dead-letters/${bad}`],
      ['POST', `/v1/admin/dead-letters/${bad}/redrive`],
    ] as const) {
      const refused = await call(gw.url, method, path, { headers: asAccount(account) });
      expect(refused.status, `${method} ${path}`).toBe(422);
      expect(ErrorBody.parse(refused.body)).toMatchObject({
        code: 'MALFORMED_RECORD',
        detail: { trace_id: bad, account_id: account },
      });
    }
    const byTraceAlone = await call(gw.url, 'GET', `/v1/admin/dead-letters/${bad}`, { headers: admin });
    expect(byTraceAlone.status).toBe(422);

    const dropped = await call(gw.url, 'DELETE', `/v1/admin/dead-letters/${bad}`, {
      headers: asAccount(account),
    });
    expect(dropped.status).toBe(204);
    const after = await call(gw.url, 'GET', '/v1/admin/dead-letters', { headers: asAccount(account) });
    expect(after.body).toMatchObject({ skipped_malformed: 0, dead_letters: [{ trace_id: good }] });
  });
});
