/**
 * Submitting a task while NATS stalls, on real NATS: the server freezes (docker pause / SIGSTOP) just as
 * the received task is published, so that try gets no answer although it reaches the server.
 */
import { randomBytes } from 'node:crypto';
import { ensureMeshStreams, IdempotencyStore, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { Streams, taskReceivedSubject } from '@agentmesh/protocol';
import { createLogger } from '@agentmesh/runtime';
import {
  startNats,
  waitFor,
  type NatsServer,
  freezingOnFirstPublish,
  type FreezingPublisher,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallerKind } from './auth.js';
import { Rejection, SubmissionUnconfirmed } from './errors.js';
import { GatewayMetrics } from './gateway-metrics.js';
import { TaskSubmitter } from './task-submission.js';

const ACCOUNT = 'stalled-acct';
/** Short, so the frozen server costs half a second per try. */
const PUBLISH_TIMEOUT_MS = 500;

let nats: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let paused = false;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
});

afterAll(async () => {
  if (paused) await nats.unpause();
  await nc?.close();
  await nats?.stop();
});

/** The real client; the first publish through it freezes the server first. Counts the tries. */
function freezingPublisher(): FreezingPublisher {
  return freezingOnFirstPublish(jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS }), {
    pause: async () => {
      await nats.pause();
      paused = true;
    },
  });
}

async function storedTasks(account = ACCOUNT): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe('a task submitted while NATS stalls', () => {
  it('when the publish of the received task gets no answer, it is sent again with the same Nats-Msg-Id: accepted, stored once, and still queued', async () => {
    const buckets = await openMeshBuckets(jetstream(nc));
    const statuses = new TaskStatusStore(buckets.tasks);
    const { js, tries } = freezingPublisher();
    const submitter = new TaskSubmitter({
      js,
      statuses,
      idempotency: new IdempotencyStore(buckets.idempotency, randomBytes(32)),
      vaultRecipient: generateVaultKeyPair('exec-1'),
      republishWindowMs: 120_000,
      metrics: new GatewayMetrics(),
      log: createLogger({ service: 'gateway', level: 'silent' }),
    });

    const submitting = submitter.submit(
      { workflow_id: 'qcc_agent', user_id: 'user-1', messages: [{ role: 'user', content: 'hello' }] },
      { kind: CallerKind.ADMIN, accountId: ACCOUNT },
    );
    await waitFor(() => tries() >= 2, { timeoutMs: 10_000, description: 'a second try of the publish' });
    await nats.unpause();
    paused = false;
    const accepted = await submitting;

    expect(accepted).not.toBeInstanceOf(Rejection);
    if (accepted instanceof Rejection) return;
    expect(accepted.duplicate).toBe(false);
    expect(await storedTasks()).toBe(1);
    expect(await statuses.get(ACCOUNT, accepted.reply.trace_id)).toMatchObject({
      status: 'queued',
      attempt: 0,
    });
  });

  it('when no try of the publish is answered, the task stays queued and the caller gets a retryable SERVICE_UNAVAILABLE naming its trace_id; a retry with the same idempotency key is the same task, stored once', async () => {
    const account = 'unconfirmed-acct';
    const caller = { kind: CallerKind.ADMIN, accountId: account } as const;
    const body = {
      workflow_id: 'qcc_agent',
      user_id: 'user-1',
      idempotency_key: 'order-42',
      messages: [{ role: 'user', content: 'hello' }],
    };
    const buckets = await openMeshBuckets(jetstream(nc));
    const statuses = new TaskStatusStore(buckets.tasks);
    const { js, tries } = freezingPublisher();
    const submitter = new TaskSubmitter({
      js,
      statuses,
      idempotency: new IdempotencyStore(buckets.idempotency, randomBytes(32)),
      vaultRecipient: generateVaultKeyPair('exec-1'),
      republishWindowMs: 120_000,
      metrics: new GatewayMetrics(),
      log: createLogger({ service: 'gateway', level: 'silent' }),
    });

    // The server stays frozen through every try: none is answered, yet each one reached its socket.
    const unconfirmed = await submitter.submit(body, caller);
    expect(tries()).toBeGreaterThan(1);
    await nats.unpause();
    paused = false;

    expect(unconfirmed).toBeInstanceOf(SubmissionUnconfirmed);
    if (!(unconfirmed instanceof SubmissionUnconfirmed)) return;
    expect(unconfirmed.code).toBe('SERVICE_UNAVAILABLE');
    expect(unconfirmed.retryable).toBe(true);
    const traceId = (unconfirmed.detail as { trace_id: string }).trace_id;
    expect(unconfirmed.toBody()).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { trace_id: traceId },
    });
    // The tries were stored after all (once): the task may run, so it is not marked failed.
    await waitFor(async () => (await storedTasks(account)) === 1, {
      timeoutMs: 10_000,
      description: 'the unconfirmed task stored',
    });
    expect(await statuses.get(account, traceId)).toMatchObject({ status: 'queued', attempt: 0 });

    const retried = await submitter.submit(body, caller);
    expect(retried).not.toBeInstanceOf(Rejection);
    if (retried instanceof Rejection) return;
    expect(retried.reply.trace_id).toBe(traceId);
    expect(retried.duplicate).toBe(true);
    expect(await storedTasks(account)).toBe(1);
    expect(await statuses.get(account, traceId)).toMatchObject({ status: 'queued', attempt: 0 });
  });
});
