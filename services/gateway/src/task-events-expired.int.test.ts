/**
 * Issue 10, defect 2: a finished task whose events outlived MESH_EVENTS' retention. The gateway runs with a
 * test-only TASK_RETENTION_MS of 1.5 s (the event stream it creates keeps events that long) over a status
 * bucket created earlier with a long TTL, as a deployment made before the retentions were aligned has.
 * Following such a task answers 410 EVENTS_EXPIRED with the final status instead of heartbeats forever;
 * a running task is not affected.
 */
import { openMeshBuckets, storedTaskEventCount, TaskEventWriter, TaskStatusStore } from '@agentmesh/bus';
import { TaskStatus } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';
import { openSse } from './__fixtures__/sse-client.js';

const ACME_KEY = 'acme-key-expiry-00112233445566778';
const EVENTS_RETENTION_MS = 1_500;

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  const { tasks } = await openMeshBuckets(js, { only: ['tasks'], taskRetentionMs: 10 * 60_000 });
  statuses = new TaskStatusStore(tasks);
  for (const liveFeed of ['true', 'false']) {
    gateways.push(
      await startTestGateway(nats.url, {
        API_KEYS: `${ACME_KEY}=acme`,
        SSE_HEARTBEAT_MS: '50',
        SSE_LIVE_FEED: liveFeed,
        TASK_RETENTION_MS: String(EVENTS_RETENTION_MS),
      }),
    );
  }
  await putSharedAgents(nats.url, 'w');
});
afterAll(async () => {
  await Promise.all(gateways.map((gw) => gw.stop()));
  await client?.close();
  await nats?.stop();
});

async function submitTask(base: string): Promise<string> {
  const res = await call(base, 'POST', '/v1/tasks', {
    body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
    headers: bearer(ACME_KEY),
  });
  expect(res.status).toBe(202);
  return res.body.trace_id;
}

/** What an executor does: the task's events, the terminal one last, then its final status. */
async function runToDone(traceId: string): Promise<void> {
  const writer = await TaskEventWriter.open(js, jsm, { accountId: 'acme', traceId, attempt: 1 });
  await writer.emit('message_chunk', { delta: 'Byte' });
  const terminal = await writer.emit('done', {
    message: 'Byte',
    steps: 1,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    duration_ms: 5,
  });
  await statuses.update('acme', traceId, (current) =>
    current === undefined
      ? undefined
      : {
          ...current,
          status: TaskStatus.DONE,
          attempt: 1,
          last_seq: terminal.seq,
          updated_at: new Date().toISOString(),
        },
  );
}

describe.each([
  ['with the live feed', 0],
  ['with SSE_LIVE_FEED=false', 1],
] as const)('following a task whose events have expired, %s', (_label, index) => {
  it('a finished task whose events are gone is 410 EVENTS_EXPIRED with its final status, also on a resume', async () => {
    const gw = gateways[index]!;
    const traceId = await submitTask(gw.url);
    await runToDone(traceId);
    await waitFor(async () => (await storedTaskEventCount(jsm, 'acme', traceId)) === 0, {
      timeoutMs: 15_000,
      description: "the task's events to expire",
    });

    for (const headers of [bearer(ACME_KEY), { ...bearer(ACME_KEY), 'last-event-id': '1' }]) {
      const res = await call(gw.url, 'GET', `/v1/tasks/${traceId}/events`, { headers });
      expect(res.status).toBe(410);
      expect(res.body).toMatchObject({
        code: 'EVENTS_EXPIRED',
        detail: { status: { trace_id: traceId, status: 'done', last_seq: 2 } },
      });
      expect(res.body.message).toContain('done');
    }
    // The status itself is still there.
    const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
    expect(status.body).toMatchObject({ status: 'done', last_seq: 2 });
  });

  it('a running task is not affected: its stream opens before any event and follows it to the terminal event', async () => {
    const gw = gateways[index]!;
    const traceId = await submitTask(gw.url);
    const sse = await openSse(`${gw.url}/v1/tasks/${traceId}/events`, bearer(ACME_KEY));
    expect(sse.status).toBe(200);
    await runToDone(traceId);
    const types: string[] = [];
    for await (const frame of sse.frames) if (frame.kind === 'event') types.push(frame.event ?? '');
    expect(types).toEqual(['message_chunk', 'done']);
  });
});
