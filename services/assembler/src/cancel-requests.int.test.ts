/**
 * The assembler's memory of cancel requests, on real NATS: what it hears on `mesh.control.cancel.>`, and
 * when it cannot vouch for a task (stored before it listened, or across a reconnect) so that the task's
 * status is read instead.
 */
import { encodeJson } from '@agentmesh/bus';
import { CancelSignal, cancelSubject, newTraceId } from '@agentmesh/protocol';
import { createLogger } from '@agentmesh/runtime';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelRequests, type CancelRequestsOptions } from './cancel-requests.js';

let nats: NatsServer;
let publisher: NatsConnection;
let listener: NatsConnection;
const logLines: string[] = [];
const log = createLogger({
  service: 'assembler',
  level: 'debug',
  destination: { write: (line: string) => void logLines.push(line) },
});
const started: CancelRequests[] = [];

beforeAll(async () => {
  nats = await startNats();
  publisher = await connect({ servers: nats.url });
  listener = await connect({ servers: nats.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
});
afterAll(async () => {
  for (const requests of started) requests.stop();
  await listener?.close();
  await publisher?.close();
  await nats?.stop();
});

async function listen(options: Partial<CancelRequestsOptions> = {}): Promise<CancelRequests> {
  const requests = await CancelRequests.start(listener, { maxEntries: 100, clockSkewMs: 0, log, ...options });
  started.push(requests);
  return requests;
}

async function requestCancel(accountId: string, traceId: string, requestedAt: string): Promise<void> {
  const signal = CancelSignal.parse({ account_id: accountId, trace_id: traceId, requested_at: requestedAt });
  publisher.publish(cancelSubject(accountId, traceId), encodeJson(signal));
  await publisher.flush();
}

describe('cancel requests heard by the assembler', () => {
  it("a broadcast cancel is reported for that task only, not for another account's task of the same trace id", async () => {
    const requests = await listen();
    const traceId = newTraceId();
    const requestedAt = '2026-01-01T00:00:00.000Z';

    await requestCancel('acme', traceId, requestedAt);

    await waitFor(() => requests.check('acme', traceId, Date.now()).state === 'requested');
    expect(requests.check('acme', traceId, Date.now())).toEqual({ state: 'requested', requestedAt });
    expect(requests.check('globex', traceId, Date.now())).toEqual({ state: 'none' });
  });

  it('a task stored before the assembler listened is unknown (its status must be read); one stored after is not cancelled', async () => {
    const storedBefore = Date.now() - 1;
    const requests = await listen({ clockSkewMs: 1_000 });
    const traceId = newTraceId();

    expect(requests.check('acme', traceId, storedBefore)).toEqual({ state: 'unknown' });
    expect(requests.check('acme', traceId, Date.now())).toEqual({ state: 'unknown' });
    expect(requests.check('acme', traceId, Date.now() + 1_000)).toEqual({ state: 'none' });
  });

  it('a signal whose body names another task than its subject is ignored and logged without its body', async () => {
    const requests = await listen();
    const traceId = newTraceId();
    const forged = CancelSignal.parse({
      account_id: 'globex',
      trace_id: traceId,
      requested_at: new Date().toISOString(),
      reason: 'forged-reason-7c1d',
    });

    publisher.publish(cancelSubject('acme', traceId), encodeJson(forged));
    await publisher.flush();

    await waitFor(() => logLines.some((line) => line.includes('ignored a malformed cancel signal')));
    expect(requests.check('acme', traceId, Date.now()).state).toBe('none');
    expect(requests.check('globex', traceId, Date.now()).state).toBe('none');
    expect(logLines.join('\n')).not.toContain('forged-reason-7c1d');
  });

  it('beyond its bound the oldest requests are forgotten, and the task falls back on the status read', async () => {
    const requests = await listen({ maxEntries: 2 });
    const traces = [newTraceId(), newTraceId(), newTraceId()];
    for (const traceId of traces) await requestCancel('acme', traceId, new Date().toISOString());

    await waitFor(() => requests.check('acme', traces[2]!, Date.now()).state === 'requested');
    expect(requests.check('acme', traces[1]!, Date.now()).state).toBe('requested');
    expect(requests.check('acme', traces[0]!, Date.now()).state).toBe('none');
  });

  it('not listening at all (no room for requests), every task is unknown', async () => {
    const requests = await listen({ maxEntries: 0 });
    const traceId = newTraceId();
    await requestCancel('acme', traceId, new Date().toISOString());

    expect(requests.check('acme', traceId, Date.now() + 60_000)).toEqual({ state: 'unknown' });
  });

  it('after its connection comes back, a task stored before the reconnect is unknown: a cancel may have been missed', async () => {
    const requests = await listen();
    const storedBeforeOutage = Date.now() + 1;
    await waitFor(() => requests.check('acme', newTraceId(), storedBeforeOutage).state === 'none');

    const reconnected = (async () => {
      for await (const status of listener.status()) if (status.type === 'reconnect') return;
    })();
    await nats.restart();
    await reconnected;
    await waitFor(() => requests.check('acme', newTraceId(), Date.now() + 60_000).state === 'none', {
      timeoutMs: 30_000,
      description: 'listening again after the reconnect',
    });

    expect(requests.check('acme', newTraceId(), storedBeforeOutage)).toEqual({ state: 'unknown' });
  });
});
