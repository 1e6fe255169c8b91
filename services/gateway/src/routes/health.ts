/**
 * Probes: `/healthz` says the process is up; `/readyz` says it can do its work — NATS answers and the
 * mesh's streams are reachable — and answers 503 with the failing checks otherwise.
 */
import { Streams } from '@agentmesh/protocol';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { FastifyInstance } from 'fastify';

export interface HealthRouteDeps {
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** Bound on each check. */
  checkTimeoutMs?: number;
}

type CheckResult = 'ok' | string;

export function registerHealthRoutes(app: FastifyInstance, deps: HealthRouteDeps): void {
  const timeoutMs = deps.checkTimeoutMs ?? 2_000;

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const checks: Record<string, CheckResult> = {
      nats: await check(timeoutMs, async () => {
        if (deps.nc.isClosed()) throw new Error('connection closed');
        await deps.nc.flush();
      }),
      ...Object.fromEntries(
        await Promise.all(
          [Streams.TASKS.name, Streams.EVENTS.name].map(
            async (stream) =>
              [`stream ${stream}`, await check(timeoutMs, () => deps.jsm.streams.info(stream))] as const,
          ),
        ),
      ),
    };
    const ready = Object.values(checks).every((result) => result === 'ok');
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks });
  });
}

async function check(timeoutMs: number, probe: () => Promise<unknown>): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([
      probe().then(
        (): CheckResult => 'ok',
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      ),
      expired,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
