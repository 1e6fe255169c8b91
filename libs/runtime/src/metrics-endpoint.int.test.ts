import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  findFreePorts,
  startNats,
  startServiceProcess,
  type NatsServer,
  type ServiceProcess,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const entry = fileURLToPath(new URL('./__fixtures__/metrics-service.ts', import.meta.url));
let nats: NatsServer;
const started: ServiceProcess[] = [];

beforeAll(async () => {
  nats = await startNats({ jetstream: false });
});
afterAll(async () => {
  await Promise.allSettled(started.map((service) => service.stop('SIGTERM')));
  await nats?.stop();
});

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const service = await startServiceProcess({ entry, env: { NATS_URL: nats.url, ...env } });
  started.push(service);
  return service;
}

async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  return response.text();
}

describe('the metrics endpoint (METRICS_PORT)', () => {
  it('when two services are given different ports, both serve /metrics, each with its own metrics', async () => {
    const [first, second] = (await findFreePorts(2)) as [number, number];
    const [a, b] = await Promise.all([
      start({ METRICS_PORT: String(first), METRIC_NAME: 'alpha_started' }),
      start({
        METRICS_PORT: String(second),
        METRIC_NAME: 'beta_started',
        OTEL_METRICS_EXPORTER: 'prometheus',
      }),
    ]);
    await Promise.all([a, b].map((service) => service.waitForLog((line) => line.msg === 'service ready')));

    const [alpha, beta] = await Promise.all([scrape(first), scrape(second)]);
    expect(alpha).toMatch(/^alpha_started_total\{[^}]*\} 1$/m);
    expect(alpha).not.toContain('beta_started');
    expect(beta).toMatch(/^beta_started_total\{[^}]*\} 1$/m);
    expect(beta).not.toContain('alpha_started');
    expect(a.logs.find((line) => line.msg === 'metrics served')).toMatchObject({
      url: `http://127.0.0.1:${first}/metrics`,
    });
  });

  it('when the port is taken, start-up fails at once with an error naming the port and METRICS_PORT, exit code 1', async () => {
    const holder: Server = createServer();
    const port = await new Promise<number>((resolve, reject) => {
      holder.once('error', reject);
      holder.listen({ host: '127.0.0.1', port: 0 }, () => {
        const address = holder.address();
        if (address && typeof address === 'object') resolve(address.port);
      });
    });
    try {
      const service = await start({ METRICS_PORT: String(port) });
      expect(await service.exited).toBe(1);
      const fatal = service.logs.find((line) => line.level === 'fatal');
      const message = String((fatal?.err as { message?: string } | undefined)?.message);
      expect(message).toContain(`METRICS_PORT=${port}`);
      expect(message).toContain(`127.0.0.1:${port}`);
      expect(message).toContain('already in use');
      expect(service.logs.some((line) => line.msg === 'service ready')).toBe(false);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it('when OTEL_METRICS_EXPORTER=prometheus is set without METRICS_PORT, start-up stops with a message naming both', async () => {
    const service = await start({ OTEL_METRICS_EXPORTER: 'prometheus' });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(/OTEL_METRICS_EXPORTER: .*needs METRICS_PORT/);
  });

  it('when METRICS_PORT is set beside an exporter that pushes, start-up stops with a message naming both', async () => {
    const [port] = (await findFreePorts(1)) as [number];
    const service = await start({ METRICS_PORT: String(port), OTEL_METRICS_EXPORTER: 'otlp' });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(/METRICS_PORT: .*OTEL_METRICS_EXPORTER=otlp/);
  });
});
