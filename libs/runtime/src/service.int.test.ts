import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNats, startServiceProcess, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const entry = fileURLToPath(new URL('./__fixtures__/echo-service.ts', import.meta.url));
let nats: NatsServer;
let client: NatsConnection;

beforeAll(async () => {
  nats = await startNats({ jetstream: false });
  client = await connect({ servers: nats.url });
});
afterAll(async () => {
  await client?.close();
  await nats?.stop();
});

describe('runService', () => {
  it('a started service answers on NATS; on SIGTERM it stops its work, drains and exits 0', async () => {
    const service = await startServiceProcess({ entry, env: { NATS_URL: nats.url } });
    await service.waitForLog((line) => line.msg === 'service ready');
    const reply = await client.request('test.echo', 'ping', { timeout: 5_000 });
    expect(reply.string()).toBe('ping');

    expect(await service.stop('SIGTERM')).toBe(0);
    const messages = service.logs.map((line) => line.msg);
    expect(messages.indexOf('echo stopping')).toBeGreaterThan(-1);
    expect(messages.indexOf('service stopped')).toBeGreaterThan(messages.indexOf('echo stopping'));
    expect(service.logs.every((line) => line.service === 'echo')).toBe(true);
  });

  it('SIGINT stops the service the same way', async () => {
    const service = await startServiceProcess({ entry, env: { NATS_URL: nats.url } });
    await service.waitForLog((line) => line.msg === 'service ready');
    expect(await service.stop('SIGINT')).toBe(0);
    expect(service.logs.map((line) => line.msg)).toContain('service stopped');
  });

  it('with LOG_FORMAT=pretty a service writes readable lines instead of JSON', async () => {
    const service = await startServiceProcess({ entry, env: { NATS_URL: nats.url, LOG_FORMAT: 'pretty' } });
    const ready = await service.waitForLog((line) => /INFO.*echo: service ready/.test(String(line.msg)));
    expect(() => JSON.parse(String(ready.msg)) as unknown).toThrow();
    expect(await service.stop('SIGTERM')).toBe(0);
  });

  it('when a variable is invalid, start-up stops with one message naming it, and exit code 1', async () => {
    const service = await startServiceProcess({
      entry,
      env: { NATS_URL: nats.url, LOG_LEVEL: 'loud', SHUTDOWN_TIMEOUT_MS: '-5' },
    });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(/invalid configuration/);
    expect(service.stderr()).toMatch(/LOG_LEVEL/);
    expect(service.stderr()).toMatch(/SHUTDOWN_TIMEOUT_MS/);
  });
});
