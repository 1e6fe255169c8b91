import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsCluster, startServiceProcess, type NatsCluster } from '@agentmesh/testkit';
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
