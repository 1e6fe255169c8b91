/**
 * The status fan-out's consumer exists only once a deployment has a webhook endpoint: gateways of a
 * deployment without one read no task status write, the first registration (through any gateway, one that
 * delivers no webhooks itself included) creates it before the endpoint is stored, and a gateway started
 * before it begins reading on its own. Real NATS, three gateways, a loopback receiver.
 */
import { randomBytes } from 'node:crypto';
import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { newTraceId, WebhookConsumers } from '@agentmesh/protocol';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  putSharedAgents,
  startTestGateway,
  type TestGateway,
} from '../__fixtures__/gateway-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../__fixtures__/webhook-receiver.js';

const ADMIN_KEY = 'admin-key-status-fanout';
const ACCOUNT = 'fanout_acct';
const { stream, durable_name: durable } = WebhookConsumers.STATUS;

let nats: NatsServer;
let receiver: WebhookReceiver;
let client: NatsConnection;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  nats = await startNats();
  receiver = await startWebhookReceiver();
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
  statuses = new TaskStatusStore((await openMeshBuckets(jetstream(client), { only: ['tasks'] })).tasks);
}, 120_000);

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  await receiver?.close();
  await client?.close();
  await nats?.stop();
});

const consumerExists = () =>
  jsm.consumers.info(stream, durable).then(
    () => true,
    () => false,
  );

/** A task's status writes as the gateway and an executor make them, ending `done`. */
async function finishTask(): Promise<string> {
  const traceId = newTraceId();
  const at = new Date().toISOString();
  const queued = {
    trace_id: traceId,
    account_id: ACCOUNT,
    workflow_id: 'report',
    attempt: 0,
    updated_at: at,
  };
  await statuses.create({ ...queued, status: 'queued' });
  await statuses.update(
    ACCOUNT,
    traceId,
    (current) => current && { ...current, status: 'running', attempt: 1 },
  );
  await statuses.update(ACCOUNT, traceId, (current) => current && { ...current, status: 'done' });
  return traceId;
}

describe('the webhook status consumer', () => {
  it('when no endpoint exists, gateways read no status write; an endpoint registered through a gateway that delivers none creates the consumer first, and a gateway started before it delivers the next completion', async () => {
    // The gateways share the master key (endpoint secrets) and the vault key, as one deployment does.
    const env = {
      ADMIN_API_KEYS: ADMIN_KEY,
      WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
      CREDENTIALS_MASTER_KEY_ID: 'master-1',
    };
    const vaultKeys = generateVaultKeyPair('executors-1');
    const delivering = await startTestGateway(nats.url, env, vaultKeys);
    gateways.push(delivering);
    const registering = await startTestGateway(nats.url, { ...env, WEBHOOKS_ENABLED: 'false' }, vaultKeys);
    gateways.push(registering);
    await putSharedAgents(nats.url, 'report');

    // A deployment without endpoints: tasks finish and nobody reads their status writes.
    await finishTask();
    expect(await consumerExists()).toBe(false);

    const created = await call(registering.url, 'POST', '/v1/admin/webhooks', {
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'x-account-id': ACCOUNT },
      body: { url: `${receiver.url}/fanout`, events: ['task.completed'] },
    });
    expect(created.status).toBe(201);
    receiver.secret('/fanout', created.body.secret as string);
    // Created before the endpoint was stored, so a status write right after the 201 is kept for readers.
    expect(await consumerExists()).toBe(true);

    const traceId = await finishTask();
    await waitFor(() => receiver.received.some((r) => r.path === '/fanout'), { timeoutMs: 15_000 });
    const deliveries = receiver.received.filter((r) => r.path === '/fanout');
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.verified).toBe(true);
    expect(JSON.parse(deliveries[0]!.body)).toMatchObject({
      type: 'task.completed',
      data: { trace_id: traceId },
    });
  });
});
