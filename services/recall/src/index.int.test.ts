import { fileURLToPath } from 'node:url';
import { startNats, startServiceProcess, waitFor, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';

let nats: NatsServer;
beforeAll(async () => {
  nats = await startNats();
});
afterAll(async () => {
  await nats?.stop();
});

it('when started as a process, the recall connects to NATS under its name, and on SIGTERM drains and exits 0', async () => {
  const service = await startServiceProcess({
    entry: fileURLToPath(new URL('./index.ts', import.meta.url)),
    // Nothing listens there; the life cycle does not need an upstream.
    env: { NATS_URL: nats.url, ONTOLOGY_QUERY_URL: 'http://127.0.0.1:9' },
  });
  await service.waitForLog((line) => line.msg === 'service ready');
  expect(service.logs.map((line) => line.msg)).toContain('recall answering');
  const names = await waitFor(async () => {
    const connz = (await (await fetch(`${nats.monitorUrl}/connz`)).json()) as {
      connections?: { name?: string }[];
    };
    const found = (connz.connections ?? []).map((c) => c.name);
    return found.includes('recall') ? found : undefined;
  });
  expect(names).toContain('recall');
  expect(await service.stop('SIGTERM')).toBe(0);
  expect(service.logs.map((line) => line.msg)).toContain('service stopped');
});
