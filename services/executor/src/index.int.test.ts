import { fileURLToPath } from 'node:url';
import { startNats, startServiceProcess, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { Consumers } from '@agentmesh/protocol';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';

const entry = fileURLToPath(new URL('./index.ts', import.meta.url));
const keys = generateVaultKeyPair('exec-process-test');

let nats: NatsServer;
beforeAll(async () => {
  nats = await startNats();
});
afterAll(async () => {
  await nats?.stop();
});

it('the executor connects to NATS under its name, creates its shared consumer, and on SIGTERM drains and exits 0', async () => {
  const service = await startServiceProcess({
    entry,
    env: {
      NATS_URL: nats.url,
      VAULT_PRIVATE_KEYS: `${keys.kid}:${keys.privateKey}`,
      PULL_EXPIRES_MS: '1000',
    },
  });
  await service.waitForLog((line) => line.msg === 'service ready');
  const names = await waitFor(async () => {
    const connz = (await (await fetch(`${nats.monitorUrl}/connz`)).json()) as {
      connections?: { name?: string }[];
    };
    const found = (connz.connections ?? []).map((c) => c.name);
    return found.includes('executor') ? found : undefined;
  });
  expect(names).toContain('executor');
  const nc = await connect({ servers: nats.url });
  const info = await (
    await jetstreamManager(nc)
  ).consumers.info(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name);
  await nc.close();
  // MAX_DELIVER 3 (the default): 2 × 3 + 1 deliveries, room for deliveries that die before any work.
  expect(info.config).toMatchObject({
    max_deliver: 7,
    ack_policy: 'explicit',
    filter_subject: 'mesh.tasks.assembled.*',
  });
  expect(await service.stop('SIGTERM')).toBe(0);
  expect(service.logs.map((line) => line.msg)).toContain('service stopped');
});

it('without vault keys the executor refuses to start, naming the missing variable', async () => {
  const service = await startServiceProcess({ entry, env: { NATS_URL: nats.url } });
  expect(await service.exited).toBe(1);
  expect(service.stderr()).toContain('VAULT_PRIVATE_KEYS');
});
