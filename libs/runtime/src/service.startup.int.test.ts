import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  startNats,
  startNatsCluster,
  startServiceProcess,
  type NatsCluster,
  type NatsServer,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const entry = fileURLToPath(new URL('./__fixtures__/jetstream-service.ts', import.meta.url));
const RETRYING = 'start-up waits for NATS/JetStream to become available; retrying';
let cluster: NatsCluster;
const clients: NatsConnection[] = [];

beforeAll(async () => {
  cluster = await startNatsCluster(3, { name: 'startup' });
});
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await cluster?.stop();
});

describe('runService start-up through a cluster outage', () => {
  it('a service started while its JetStream cluster has no quorum waits, logging each retry, and becomes ready once the cluster has elected a leader', async () => {
    const [first, second, survivor] = cluster.nodes;
    // Two of three members down: the survivor takes connections but its JetStream cannot answer. The
    // first seed URLs are the dead ones, so the service reaches NATS only if it was given every seed.
    await Promise.all([first!.stop(), second!.stop()]);

    const service = await startServiceProcess({
      entry,
      env: { NATS_URL: cluster.urls.join(','), STARTUP_TIMEOUT_MS: '600000' },
    });
    try {
      const waiting = await service.waitForLog((line) => line.msg === RETRYING, 60_000);
      expect(waiting.attempt).toBe(1);
      expect(waiting.level).toBe('warn');

      await first!.restart();
      await cluster.waitForMetaLeader();
      await service.waitForLog((line) => line.msg === 'service ready', 120_000);

      const client = await connect({ servers: survivor!.url });
      clients.push(client);
      const reply = await client.request('test.stream-info', '', { timeout: 5_000 });
      expect(reply.string()).toBe('STARTUP_FIXTURE');
      expect(service.logs.some((line) => line.msg === 'start-up failed')).toBe(false);
    } finally {
      await service.stop('SIGTERM');
    }
  }, 240_000);
});

describe('runService start-up through a paused or JetStream-less server', () => {
  let nats: NatsServer;
  let plain: NatsServer;
  let paused = false;

  beforeAll(async () => {
    [nats, plain] = await Promise.all([startNats(), startNats({ jetstream: false })]);
  });
  afterAll(async () => {
    if (paused) await nats?.unpause();
    await Promise.allSettled([nats?.stop(), plain?.stop()]);
  });

  it('a service whose server freezes during its start-up retries and becomes ready once the server is resumed', async () => {
    const service = await startServiceProcess({
      entry,
      env: { NATS_URL: nats.url, HOLD_FIRST_ATTEMPT: 'true', STARTUP_TIMEOUT_MS: '600000' },
    });
    try {
      await service.waitForLog((line) => line.msg === 'first start-up attempt holds until SIGUSR2');
      await nats.pause();
      paused = true;
      service.child.kill('SIGUSR2');
      await service.waitForLog((line) => line.msg === RETRYING, 60_000);
      await nats.unpause();
      paused = false;
      await service.waitForLog((line) => line.msg === 'service ready', 60_000);

      const client = await connect({ servers: nats.url });
      clients.push(client);
      const reply = await client.request('test.stream-info', '', { timeout: 5_000 });
      expect(reply.string()).toBe('STARTUP_FIXTURE');
    } finally {
      await service.stop('SIGTERM');
    }
  }, 180_000);

  it('when JetStream stays unavailable past STARTUP_TIMEOUT_MS, the service exits 1 with a message naming the bound', async () => {
    const service = await startServiceProcess({
      entry,
      env: { NATS_URL: plain.url, STARTUP_TIMEOUT_MS: '1500' },
    });
    expect(await service.exited).toBe(1);
    const failure = service.logs.find((line) => line.msg === 'start-up failed');
    expect(JSON.stringify(failure)).toMatch(/STARTUP_TIMEOUT_MS/);
  }, 60_000);
});
