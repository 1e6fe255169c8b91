import {
  newTraceId,
  RESUMED_PARK_HEADER,
  SEALED_VAULT_ALGORITHM,
  taskAssembledSubject,
  type AssembledTask,
  type ParkedTask,
} from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval, expireApprovals } from './approval-decisions.js';
import { ParkedTaskStore } from './parked-task-store.js';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
const STREAM = 'PARKED_TEST_TASKS';

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: STREAM, subjects: ['mesh.tasks.>'], duplicate_window: 120_000_000_000 });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

async function newStore(): Promise<ParkedTaskStore> {
  return new ParkedTaskStore(
    await new Kvm(js).create(`parked_${Date.now()}_${Math.random() * 1e6}`.replace('.', '')),
  );
}

function assembled(traceId: string): AssembledTask {
  return {
    task_meta: {
      workflow_id: 'payments',
      trace_id: traceId,
      user_id: 'u1',
      account_id: 'acme',
      submitted_at: new Date().toISOString(),
    },
    input: { messages: [{ role: 'user', content: 'pay the invoice' }], variables: {} },
    runtime_config: {
      model: {
        provider: 'openai',
        model_name: 'm',
        base_url: 'http://127.0.0.1:1/v1',
        tool_protocol: 'native',
      },
      tools: [],
      vault: { v: 1, alg: SEALED_VAULT_ALGORITHM, kid: 'k1', epk: 'ZXBr', iv: 'aXY', ct: 'Y3Q', tag: 'dGFn' },
    },
    limits: { max_steps: 10 },
  };
}

function parkedTask(traceId: string, callIds: string[], now = new Date()): ParkedTask {
  return {
    trace_id: traceId,
    account_id: 'acme',
    subject: taskAssembledSubject('acme'),
    task: assembled(traceId),
    parked_at: now.toISOString(),
    attempt: 1,
    approvals: callIds.map((callId, index) => ({
      call_id: callId,
      tool: 'pay_invoice',
      reason: 'amount above 1000',
      seq: index + 3,
      requested_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 60_000).toISOString(),
      state: 'pending',
    })),
  };
}

async function queuedCopies(traceId: string): Promise<AssembledTask[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(STREAM, { subjects_filter: '>' });
  const found: AssembledTask[] = [];
  for (let seq = 1; seq <= info.state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(STREAM, { seq }).catch(() => undefined);
    const task = message?.json<AssembledTask>();
    if (task?.task_meta.trace_id === traceId) {
      // Marked, so the executor resumes it from its events although its delivery count starts at 1.
      expect(message?.header.get(RESUMED_PARK_HEADER)).toBe('1');
      found.push(task);
    }
  }
  return found;
}

describe('parked task store', () => {
  it('a task waiting on two approvals is queued again only once both are decided, and then once however many callers race', async () => {
    const store = await newStore();
    const traceId = newTraceId();
    await store.park(parkedTask(traceId, ['call_1', 'call_2']));

    const decide = (callId: string, approve: boolean) =>
      store.update('acme', traceId, (current) => {
        const outcome = decideApproval(current, callId, { approve }, new Date());
        return outcome.ok ? outcome.parked : undefined;
      });
    await decide('call_1', true);
    expect(await store.resumeIfReady(js, 'acme', traceId)).toBe(false);
    expect(await queuedCopies(traceId)).toHaveLength(0);

    await decide('call_2', false);
    const results = await Promise.all([1, 2, 3].map(() => store.resumeIfReady(js, 'acme', traceId)));
    expect(results).toEqual([true, true, true]);
    const copies = await queuedCopies(traceId);
    expect(copies).toHaveLength(1);
    expect(copies[0]).toEqual((await store.get('acme', traceId))?.parked.task);
    const stored = await store.get('acme', traceId);
    expect(stored?.parked.resumed_at).toBeDefined();
    expect(stored?.parked.approvals.map((approval) => approval.state)).toEqual(['approved', 'denied']);
  });

  it('an approval past its timeout makes the task ready at once, the other still pending', async () => {
    const store = await newStore();
    const traceId = newTraceId();
    const parkedAt = new Date(Date.now() - 120_000);
    await store.park(parkedTask(traceId, ['call_1', 'call_2'], parkedAt));
    await store.update('acme', traceId, (current) => expireApprovals(current, new Date()));
    expect(await store.resumeIfReady(js, 'acme', traceId)).toBe(true);
    expect(await queuedCopies(traceId)).toHaveLength(1);
  });

  it('two deciders of one approval: the first decision stands and the second is refused as not pending', async () => {
    const store = await newStore();
    const traceId = newTraceId();
    await store.park(parkedTask(traceId, ['call_1']));
    const refusals: string[] = [];
    await Promise.all(
      [true, false].map((approve) =>
        store.update('acme', traceId, (current) => {
          const outcome = decideApproval(current, 'call_1', { approve }, new Date());
          if (!outcome.ok) refusals.push(outcome.refusal);
          return outcome.ok ? outcome.parked : undefined;
        }),
      ),
    );
    const states = (await store.get('acme', traceId))?.parked.approvals.map((approval) => approval.state);
    expect(states).toHaveLength(1);
    expect(['approved', 'denied']).toContain(states?.[0]);
    expect(refusals).toEqual(['not_pending']);
  });

  it('deleting with a stale revision leaves a newer park of the task in place', async () => {
    const store = await newStore();
    const traceId = newTraceId();
    const first = await store.park(parkedTask(traceId, ['call_1']));
    const second = await store.park(parkedTask(traceId, ['call_7']));
    expect(await store.delete('acme', traceId, first.revision)).toBe(false);
    expect((await store.get('acme', traceId))?.parked.approvals[0]?.call_id).toBe('call_7');
    expect(await store.delete('acme', traceId, second.revision)).toBe(true);
    expect(await store.get('acme', traceId)).toBeUndefined();
  });

  it("another account's key finds nothing", async () => {
    const store = await newStore();
    const traceId = newTraceId();
    await store.park(parkedTask(traceId, ['call_1']));
    expect(await store.get('other', traceId)).toBeUndefined();
  });
});
