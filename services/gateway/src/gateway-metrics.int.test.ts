import { Consumers, Streams, Subjects, taskAssembledSubject } from '@agentmesh/protocol';
import { startTelemetry, type Telemetry } from '@agentmesh/runtime';
import { CollectingMetricReader, startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayMetric } from './gateway-metrics.js';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';
import { openSse } from './__fixtures__/sse-client.js';

const ACME_KEY = 'acme-key-metrics-5d4c3b2a1f0e';
const USER_ID = 'user-metrics-canary-71c3';
const reader = new CollectingMetricReader();

let telemetry: Telemetry;
let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  // Registered before the gateway starts, as runService does: the gateway takes its meter from it.
  telemetry = startTelemetry({ service: 'gateway-test', env: {}, metricReaders: [reader] });
  nats = await startNats();
  gw = await startTestGateway(nats.url, { API_KEYS: `${ACME_KEY}=acme`, QUEUE_DEPTH_MAX_AGE_MS: '1000' });
  await putSharedAgents(nats.url, 'qcc_agent');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
  await telemetry?.shutdown();
});

const submission = (extra: Record<string, unknown> = {}) => ({
  workflow_id: 'qcc_agent',
  user_id: USER_ID,
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

async function submitOverNats(body: unknown, account: string): Promise<Record<string, unknown>> {
  const headers = natsHeaders();
  headers.set('x-account-id', account);
  const reply = await client.request(Subjects.GATEWAY_SUBMIT, JSON.stringify(body), {
    timeout: 5_000,
    headers,
  });
  return reply.json();
}

/** The summed value of a counter's points whose attributes include `attributes`. */
async function counted(name: string, attributes: Record<string, unknown>): Promise<number> {
  return (await reader.points(name))
    .filter((point) => Object.entries(attributes).every(([key, value]) => point.attributes[key] === value))
    .reduce((sum, point) => sum + (typeof point.value === 'number' ? point.value : point.value.count), 0);
}

/** Every attribute value of every metric collected now, as text. */
async function allAttributeValues(): Promise<string[]> {
  const names = (await reader.metrics()).map((metric) => metric.descriptor.name);
  const points = (await Promise.all(names.map((name) => reader.points(name)))).flat();
  return points.flatMap((point) => Object.values(point.attributes).map(String));
}

describe('task submissions', () => {
  it('are counted by outcome over HTTP and the NATS ingress: accepted, duplicate, and refused with the error code', async () => {
    const submissions = GatewayMetric.TASK_SUBMISSIONS;
    const before = {
      accepted: await counted(submissions, { outcome: 'accepted' }),
      duplicate: await counted(submissions, { outcome: 'duplicate' }),
      invalid: await counted(submissions, { outcome: 'refused', 'error.type': 'INVALID_REQUEST' }),
      reused: await counted(submissions, { outcome: 'refused', 'error.type': 'IDEMPOTENCY_KEY_REUSED' }),
    };

    const first = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ idempotency_key: 'metrics-key-1' }),
      headers: bearer(ACME_KEY),
    });
    expect(first.status).toBe(202);
    const repeat = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ idempotency_key: 'metrics-key-1' }),
      headers: bearer(ACME_KEY),
    });
    expect(repeat.body.trace_id).toBe(first.body.trace_id);
    const reused = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ idempotency_key: 'metrics-key-1', messages: [{ role: 'user', content: 'other' }] }),
      headers: bearer(ACME_KEY),
    });
    expect(reused.status).toBe(422);
    const invalid = await call(gw.url, 'POST', '/v1/tasks', {
      body: { user_id: USER_ID },
      headers: bearer(ACME_KEY),
    });
    expect(invalid.status).toBe(400);
    expect(await submitOverNats(submission(), 'nats-metrics')).toHaveProperty('trace_id');
    expect(await submitOverNats({ workflow_id: 'qcc_agent' }, 'nats-metrics')).toMatchObject({
      code: 'INVALID_REQUEST',
    });

    expect(await counted(submissions, { outcome: 'accepted' })).toBe(before.accepted + 2);
    expect(await counted(submissions, { outcome: 'duplicate' })).toBe(before.duplicate + 1);
    expect(await counted(submissions, { outcome: 'refused', 'error.type': 'INVALID_REQUEST' })).toBe(
      before.invalid + 2,
    );
    expect(await counted(submissions, { outcome: 'refused', 'error.type': 'IDEMPOTENCY_KEY_REUSED' })).toBe(
      before.reused + 1,
    );
    const values = await allAttributeValues();
    for (const secretOrId of [ACME_KEY, USER_ID, 'acme', 'nats-metrics', first.body.trace_id as string]) {
      expect(values.filter((value) => value.includes(secretOrId))).toEqual([]);
    }
  });
});

describe('HTTP requests', () => {
  it('are recorded in http.server.request.duration by method, route template and status, never by the URL with its ids', async () => {
    const accepted = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: bearer(ACME_KEY),
    });
    const traceId: string = accepted.body.trace_id;
    expect((await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) })).status).toBe(
      200,
    );
    expect((await call(gw.url, 'GET', `/v1/nowhere/${traceId}`)).status).toBe(404);
    expect((await call(gw.url, 'PROPFIND', '/v1/tasks')).status).toBe(404);

    const duration = GatewayMetric.HTTP_REQUEST_DURATION;
    expect(
      await counted(duration, {
        'http.request.method': 'GET',
        'http.route': '/v1/tasks/:trace_id',
        'http.response.status_code': 200,
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      await counted(duration, {
        'http.request.method': 'POST',
        'http.route': '/v1/tasks',
        'http.response.status_code': 202,
      }),
    ).toBeGreaterThanOrEqual(1);
    const unrouted = (await reader.points(duration)).filter(
      (point) => point.attributes['http.response.status_code'] === 404,
    );
    expect(unrouted.map((point) => point.attributes)).toEqual(
      expect.arrayContaining([
        { 'http.request.method': 'GET', 'http.response.status_code': 404, 'url.scheme': 'http' },
        { 'http.request.method': '_OTHER', 'http.response.status_code': 404, 'url.scheme': 'http' },
      ]),
    );
    const [point] = await reader.points(duration);
    expect(point?.value).toMatchObject({ count: expect.any(Number), sum: expect.any(Number) });
    expect((await allAttributeValues()).filter((value) => value.includes(traceId))).toEqual([]);
  });
});

describe('event streams', () => {
  it('an open stream is counted while it is open and no longer once the client goes, and its request is recorded when it ends', async () => {
    const active = async () => (await reader.points(GatewayMetric.EVENT_STREAMS_ACTIVE))[0]?.value;
    const eventsRoute = { 'http.route': '/v1/tasks/:trace_id/events', 'http.response.status_code': 200 };
    const streamsEnded = await counted(GatewayMetric.HTTP_REQUEST_DURATION, eventsRoute);
    expect(await active()).toBe(0);

    const accepted = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: bearer(ACME_KEY),
    });
    const stream = await openSse(`${gw.url}/v1/tasks/${accepted.body.trace_id}/events`, bearer(ACME_KEY));
    expect(stream.status).toBe(200);
    await waitFor(async () => (await active()) === 1, { description: 'the stream to be counted open' });

    stream.close();
    await waitFor(async () => (await active()) === 0, { description: 'the stream to be counted closed' });
    await waitFor(
      async () => (await counted(GatewayMetric.HTTP_REQUEST_DURATION, eventsRoute)) === streamsEnded + 1,
      { description: 'the ended stream to be recorded as a request' },
    );
  });
});

describe('task queue depth', () => {
  it('reports the tasks waiting for an assembler and for an executor from their consumers’ num_pending', async () => {
    const js = jetstream(client);
    // The consumers the assembler and the executors create, here with nobody reading them.
    for (const consumer of [Consumers.ASSEMBLER, Consumers.EXECUTOR]) {
      await jsm.consumers.add(Streams.TASKS.name, {
        durable_name: consumer.durable_name,
        filter_subject: consumer.filter_subject,
        ack_policy: AckPolicy.Explicit,
      });
    }
    for (let i = 0; i < 3; i++) {
      const accepted = await call(gw.url, 'POST', '/v1/tasks', {
        body: submission(),
        headers: bearer(ACME_KEY),
      });
      expect(accepted.status).toBe(202);
    }
    await js.publish(taskAssembledSubject('acme'), '{}');
    // MESH_TASKS is a work queue: it holds exactly the tasks no consumer has taken, this file's earlier ones too.
    const received = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: 'mesh.tasks.received.>' });
    const waiting = Object.values(received.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
    expect(waiting).toBeGreaterThanOrEqual(3);

    // The depths read before the consumers existed are answered until they are a second old.
    await waitFor(
      async () => {
        const points = await reader.points(GatewayMetric.TASK_QUEUE_DEPTH);
        const depth = Object.fromEntries(points.map((point) => [point.attributes.stage, point.value]));
        return depth.received === waiting && depth.assembled === 1;
      },
      { timeoutMs: 5_000, description: `queue depths of ${waiting} received and 1 assembled task` },
    );
  });
});
