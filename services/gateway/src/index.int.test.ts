import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startNats, startServiceProcess, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { afterAll, beforeAll, expect, it } from 'vitest';

const entry = fileURLToPath(new URL('./index.ts', import.meta.url));
let nats: NatsServer;
beforeAll(async () => {
  nats = await startNats();
});
afterAll(async () => {
  await nats?.stop();
});

const keys = generateVaultKeyPair('executors-1');
const env = () => ({
  NATS_URL: nats.url,
  HTTP_PORT: '0',
  VAULT_KEY_ID: keys.kid,
  VAULT_PUBLIC_KEY: keys.publicKey,
  CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
  CREDENTIALS_MASTER_KEY_ID: 'master-1',
  API_KEYS: 'process-key-0123456789abcdef=acme',
});

it('the gateway connects to NATS under its name, serves HTTP on the logged address, is ready, and on SIGTERM drains and exits 0', async () => {
  const service = await startServiceProcess({ entry, env: env() });
  const listening = await service.waitForLog((line) => line.msg === 'http listening');
  await service.waitForLog((line) => line.msg === 'service ready');
  const names = await waitFor(async () => {
    const connz = (await (await fetch(`${nats.monitorUrl}/connz`)).json()) as {
      connections?: { name?: string }[];
    };
    const found = (connz.connections ?? []).map((c) => c.name);
    return found.includes('gateway') ? found : undefined;
  });
  expect(names).toContain('gateway');

  const url = listening.url as string;
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  const ready = await fetch(`${url}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toEqual({
    status: 'ready',
    checks: { nats: 'ok', 'stream MESH_TASKS': 'ok', 'stream MESH_EVENTS': 'ok' },
  });

  expect(await service.stop('SIGTERM')).toBe(0);
  expect(service.logs.map((line) => line.msg)).toContain('service stopped');
  expect(JSON.stringify(service.logs)).not.toContain('process-key-0123456789abcdef');
});

it('a missing or malformed variable stops start-up with one message naming each, and no secret value in it', async () => {
  const { VAULT_PUBLIC_KEY: _missing, ...rest } = env();
  const service = await startServiceProcess({
    entry,
    env: { ...rest, API_KEYS: 'leaky-secret-key-value', HTTP_PORT: 'eighty' },
  });
  expect(await service.exited).toBe(1);
  const stderr = service.stderr();
  expect(stderr).toContain('VAULT_PUBLIC_KEY');
  expect(stderr).toContain('HTTP_PORT');
  expect(stderr).toContain('API_KEYS: entry 1 is not key=account[:type]');
  expect(stderr).not.toContain('leaky-secret-key-value');
});
