/**
 * Webhook deliveries survive the death of the delivering gateway (SIGKILL, its real entry point as a
 * process) and a NATS restart: a retry queued before the kill, a task that finished while no gateway ran,
 * and one that finished after NATS came back are all delivered by the next gateway, each verified by the
 * receiver with the `standardwebhooks` package, the retry under the webhook-id of its first attempt. A
 * gateway left running through another NATS restart goes on delivering.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { newTraceId } from '@agentmesh/protocol';
import {
  startNats,
  startServiceProcess,
  waitFor,
  type NatsServer,
  type ServiceProcess,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call, type Json } from '../__fixtures__/gateway-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../__fixtures__/webhook-receiver.js';

const entry = fileURLToPath(new URL('../index.ts', import.meta.url));
const ADMIN_KEY = 'admin-key-webhook-restarts';
const keys = generateVaultKeyPair('executors-1');
const masterKey = randomBytes(32).toString('base64');

let nats: NatsServer;
let receiver: WebhookReceiver;
const services: ServiceProcess[] = [];

beforeAll(async () => {
  nats = await startNats();
  receiver = await startWebhookReceiver();
}, 120_000);

afterAll(async () => {
  for (const service of services) await service.stop('SIGKILL').catch(() => undefined);
  await receiver?.close();
  await nats?.stop();
});

async function startGatewayProcess(): Promise<string> {
  const service = await startServiceProcess({
    entry,
    env: {
      NATS_URL: nats.url,
      HTTP_PORT: '0',
      VAULT_KEY_ID: keys.kid,
      VAULT_PUBLIC_KEY: keys.publicKey,
      CREDENTIALS_MASTER_KEY: masterKey,
      CREDENTIALS_MASTER_KEY_ID: 'master-1',
      ADMIN_API_KEYS: ADMIN_KEY,
      WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE_MS: '2000,2000,2000',
      WEBHOOK_TIMEOUT_MS: '5000',
    },
  });
  services.push(service);
  const listening = await service.waitForLog((line) => line.msg === 'http listening', 60_000);
  await service.waitForLog((line) => line.msg === 'service ready', 60_000);
  return listening.url as string;
}

/** Writes a task's statuses as its executor would, ending `done`, over a connection of its own. */
async function finishTask(accountId: string): Promise<string> {
  const nc = await connect({ servers: nats.url });
  try {
    const statuses = new TaskStatusStore((await openMeshBuckets(jetstream(nc), { only: ['tasks'] })).tasks);
    const traceId = newTraceId();
    const at = new Date().toISOString();
    await statuses.create({
      trace_id: traceId,
      account_id: accountId,
      workflow_id: 'report',
      status: 'running',
      attempt: 1,
      updated_at: at,
    });
    await statuses.update(accountId, traceId, (current) => current && { ...current, status: 'done' });
    return traceId;
  } finally {
    await nc.close();
  }
}

const durable = () => receiver.received.filter((r) => r.path === '/durable');
const deliveredTrace = (traceId: string) =>
  durable().some(
    (r) => r.status === 204 && r.verified && (JSON.parse(r.body) as Json).data.trace_id === traceId,
  );

it('a retry queued before a SIGKILL of the gateway, a task finished while no gateway ran, and one finished after a NATS restart are all delivered by the next gateway', async () => {
  const first = await startGatewayProcess();
  const created = await call(first, 'POST', '/v1/admin/webhooks', {
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'x-account-id': 'acme' },
    body: { url: `${receiver.url}/durable`, events: ['task.completed'] },
  });
  expect(created.status).toBe(201);
  receiver.secret('/durable', created.body.secret as string);
  receiver.plan('/durable', { failFirst: 1 });

  const beforeKill = await finishTask('acme');
  await waitFor(() => durable().length >= 1, { timeoutMs: 20_000, description: 'the first attempt' });
  const firstAttempt = durable()[0]!;
  expect(firstAttempt.status).toBe(500);
  expect(firstAttempt.verified).toBe(true);

  await services[0]!.stop('SIGKILL');
  const whileDown = await finishTask('acme');
  await nats.kill();
  await nats.restart();
  const afterRestart = await finishTask('acme');

  await startGatewayProcess();
  await waitFor(() => [beforeKill, whileDown, afterRestart].every(deliveredTrace), {
    timeoutMs: 60_000,
    description: 'all three tasks delivered',
  });
  const retried = durable().filter((r) => (JSON.parse(r.body) as Json).data.trace_id === beforeKill);
  // At least once: the killed gateway may have queued the retry without acking the failed attempt, so
  // the next one can deliver the same webhook-id twice (receivers dedupe by it). Never a third failure.
  expect(retried[0]!.status).toBe(500);
  expect(retried.slice(1).map((r) => r.status)).toEqual(retried.slice(1).map(() => 204));
  expect(retried.length).toBeGreaterThanOrEqual(2);
  expect(retried.length).toBeLessThanOrEqual(3);
  expect(new Set(retried.map((r) => r.id)).size).toBe(1);
  for (const traceId of [whileDown, afterRestart]) {
    expect(durable().filter((r) => (JSON.parse(r.body) as Json).data.trace_id === traceId)).toHaveLength(1);
  }
}, 180_000);

it('a gateway that keeps running through a NATS restart delivers the tasks that finish after it', async () => {
  const running = services.at(-1)!;
  expect(running.child.exitCode).toBeNull();
  await nats.kill();
  await nats.restart();
  const afterSecondRestart = await finishTask('acme');
  await waitFor(() => deliveredTrace(afterSecondRestart), {
    timeoutMs: 60_000,
    description: 'the delivery after the second restart',
  });
  expect(
    durable().filter((r) => (JSON.parse(r.body) as Json).data.trace_id === afterSecondRestart),
  ).toHaveLength(1);
}, 120_000);
