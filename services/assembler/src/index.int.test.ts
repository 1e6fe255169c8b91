import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Consumers } from '@agentmesh/protocol';
import { startNats, startServiceProcess, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { seedFixture } from './__fixtures__/assembly.js';

const entry = fileURLToPath(new URL('./index.ts', import.meta.url));
const vaultKey = generateVaultKeyPair('exec-1');

let nats: NatsServer;
let toolsDir: string;
beforeAll(async () => {
  nats = await startNats();
  toolsDir = await mkdtemp(join(tmpdir(), 'assembler-process-tools-'));
});
afterAll(async () => {
  await nats?.stop();
  if (toolsDir) await rm(toolsDir, { recursive: true, force: true });
});

function serviceEnv(): Record<string, string> {
  return {
    NATS_URL: nats.url,
    VAULT_KEY_ID: vaultKey.kid,
    VAULT_PUBLIC_KEY: vaultKey.publicKey,
    CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
    CREDENTIALS_MASTER_KEY_ID: 'master-1',
    TOOLS_DIR: toolsDir,
  };
}

it('the assembler seeds its tools, reports a bad tool file without stopping, consumes as `assembler`, and on SIGTERM drains and exits 0', async () => {
  await writeFile(join(toolsDir, 'qichacha.json'), JSON.stringify(seedFixture('000-s2-plugin.json')));
  await writeFile(join(toolsDir, 'zz-broken.json'), '{"name": ');

  const service = await startServiceProcess({ entry, env: serviceEnv() });
  await service.waitForLog((line) => line.msg === 'service ready');

  const rejected = service.logs.find((line) => line.msg === 'tool file rejected; skipped');
  expect(rejected).toMatchObject({
    level: 'warn',
    path: 'zz-broken.json',
    reason: expect.stringMatching(/^not valid JSON/),
  });
  expect(
    service.logs.find((line) => line.msg === 'tool registry synchronised with the tools directory'),
  ).toMatchObject({
    added: ['search_company_basic'],
    rejected: 1,
  });
  const names = await waitFor(async () => {
    const connz = (await (await fetch(`${nats.monitorUrl}/connz`)).json()) as {
      connections?: { name?: string }[];
    };
    const found = (connz.connections ?? []).map((c) => c.name);
    return found.includes('assembler') ? found : undefined;
  });
  expect(names).toContain('assembler');
  const jsz = (await (await fetch(`${nats.monitorUrl}/jsz?consumers=true`)).json()) as {
    account_details?: { stream_detail?: { name: string; consumer_detail?: { name: string }[] }[] }[];
  };
  const consumers = (jsz.account_details ?? [])
    .flatMap((account) => account.stream_detail ?? [])
    .filter((stream) => stream.name === Consumers.ASSEMBLER.stream)
    .flatMap((stream) => (stream.consumer_detail ?? []).map((consumer) => consumer.name));
  expect(consumers).toContain(Consumers.ASSEMBLER.durable_name);

  expect(await service.stop('SIGTERM')).toBe(0);
  expect(service.logs.map((line) => line.msg)).toContain('service stopped');
});

it('without its keys the assembler refuses to start and names each missing variable', async () => {
  const service = await startServiceProcess({ entry, env: { NATS_URL: nats.url } });
  expect(await service.exited).toBe(1);
  for (const variable of [
    'VAULT_KEY_ID',
    'VAULT_PUBLIC_KEY',
    'CREDENTIALS_MASTER_KEY',
    'CREDENTIALS_MASTER_KEY_ID',
  ]) {
    expect(service.stderr()).toContain(variable);
  }
});
