/**
 * What one open SSE stream holds in the gateway: starts NATS (testkit) and a gateway in this process,
 * submits a few tasks, opens N raw `GET /v1/tasks/{id}/events` connections from a child process (so the
 * clients' memory is not counted), and prints the gateway process's heap and RSS per stream after a full
 * GC, before and with the streams open; with `SSE_PROBE_EVENTS=<n>`, also after each task streamed n chunks to
 * its followers, before and after a full GC (what is garbage, what is held). Writes heap snapshots `<prefix>-before.heapsnapshot` and
 * `<prefix>-open.heapsnapshot` when `SSE_PROBE_SNAPSHOT` names a prefix. Run: `node --expose-gc --import tsx scripts/sse-memory-probe.ts [N]`.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeHeapSnapshot } from 'node:v8';
import { createLogger, loadConfig } from '@agentmesh/runtime';
import { startNats, waitFor } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { TaskEventWriter } from '@agentmesh/bus';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { gatewayConfigSchema } from '../src/config.js';
import { startGateway } from '../src/gateway.js';
import { putSharedAgents } from '../src/__fixtures__/gateway-harness.js';

const streams = Number(process.argv[2] ?? 500);
const TASKS = 10;
const KEY = 'probe-key-00112233445566778899aabb';

if (process.argv[2] === 'client') {
  // The child: opens the connections and keeps them open until told to stop.
  const { connect: tcp } = await import('node:net');
  const [, , , port, count, ...ids] = process.argv;
  const sockets = Array.from({ length: Number(count) }, (_, i) => {
    const socket = tcp(Number(port), '127.0.0.1');
    socket.write(
      `GET /v1/tasks/${ids[i % ids.length]}/events HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEY}\r\naccept: text/event-stream\r\n\r\n`,
    );
    socket.on('data', () => {});
    return socket;
  });
  process.on('message', () => {
    for (const socket of sockets) socket.destroy();
    process.exit(0);
  });
} else {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  const nats = await startNats();
  const keys = generateVaultKeyPair('executors-1');
  const config = loadConfig(gatewayConfigSchema, {
    NATS_URL: nats.url,
    HTTP_PORT: '0',
    LOG_LEVEL: 'warn',
    VAULT_KEY_ID: keys.kid,
    VAULT_PUBLIC_KEY: keys.publicKey,
    CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
    CREDENTIALS_MASTER_KEY_ID: 'master-1',
    API_KEYS: `${KEY}=acme`,
    SSE_MAX_STREAMS: String(streams + 10),
    SSE_MAX_STREAMS_PER_CALLER: String(streams + 10),
  });
  const log = createLogger({ service: 'gateway', level: 'warn', destination: { write: () => {} } });
  const nc = await connect({ servers: nats.url });
  const gateway = await startGateway({ config, log, nc });
  await putSharedAgents(nats.url, 'w');
  const ids: string[] = [];
  for (let i = 0; i < TASKS; i++) {
    const res = await fetch(`${gateway.url}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] }),
    });
    ids.push(((await res.json()) as { trace_id: string }).trace_id);
  }
  const measure = () => {
    for (let i = 0; i < 4; i++) gc();
    const m = process.memoryUsage();
    return { heap: m.heapUsed, rss: m.rss, external: m.external + m.arrayBuffers };
  };
  const before = measure();
  const snapshots = process.env.SSE_PROBE_SNAPSHOT;
  if (snapshots) writeHeapSnapshot(`${snapshots}-before.heapsnapshot`);
  const port = new URL(gateway.url).port;
  const child = fork(new URL(import.meta.url).pathname, ['client', port, String(streams), ...ids], {
    execArgv: ['--import', 'tsx'],
  });
  const feed = gateway.liveEvents;
  await waitFor(() => (feed?.stats().followers ?? 0) >= streams, {
    description: 'every stream open',
    timeoutMs: 60_000,
  });
  const open = measure();
  const kib = (bytes: number) => (bytes / 1024 / streams).toFixed(1);
  console.log(
    `${streams} streams: heap ${kib(open.heap - before.heap)} KiB/stream, external ${kib(open.external - before.external)} KiB/stream, rss ${kib(open.rss - before.rss)} KiB/stream`,
  );
  if (snapshots) writeHeapSnapshot(`${snapshots}-open.heapsnapshot`);
  // Then each task streams `SSE_PROBE_EVENTS` chunks (default 0) to its followers: RSS and heap with
  // the garbage they leave, and after a full GC.
  const chunks = Number(process.env.SSE_PROBE_EVENTS ?? 0);
  if (chunks > 0) {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const writers = await Promise.all(
      ids.map((traceId) => TaskEventWriter.open(js, jsm, { accountId: 'acme', traceId, attempt: 1 })),
    );
    for (let i = 0; i < chunks; i++) {
      await Promise.all(
        writers.map((w) => w.emit('message_chunk', { delta: `token ${i} of a longer answer ` })),
      );
    }
    await waitFor(() => (feed?.stats().received ?? 0) >= chunks * TASKS, {
      description: 'every chunk in the feed',
      timeoutMs: 60_000,
    });
    const m = process.memoryUsage();
    const loaded = measure();
    console.log(
      `after ${chunks} chunks per task: before GC heap ${kib(m.heapUsed - before.heap)} rss ${kib(m.rss - before.rss)} KiB/stream; after GC heap ${kib(loaded.heap - before.heap)} rss ${kib(loaded.rss - before.rss)} KiB/stream`,
    );
  }
  child.send('stop');
  await gateway.stop();
  await nc.close();
  await nats.stop();
}
