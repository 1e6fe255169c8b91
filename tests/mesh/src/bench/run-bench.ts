/**
 * `npm run bench`: end-to-end throughput (tasks/s) and latency (p50/p99, submit → done) of a one-tool
 * task through the whole mesh with the scripted model at zero latency, at concurrency 1 and 64, and
 * the same task as a plain in-process loop (no NATS) in the same run as the floor. Prints a table
 * and writes the numbers to .bench/mesh.json. Measures only: there are no targets yet.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { TaskEvent } from '@agentmesh/protocol';
import { startRecordingApi, startScriptedModel } from '@agentmesh/testkit';
import { connect } from '@nats-io/transport-node';
import { admin, submit } from '../mesh-client.js';
import { MESH_ACCOUNT, startMesh } from '../mesh-harness.js';
import { runPlainTask } from './plain-loop.js';
import { summarise, round, type LatencySummary } from './stats.js';

interface Row extends LatencySummary {
  scenario: string;
  concurrency: number;
  tasks_per_s: number;
}

async function measure(
  scenario: string,
  concurrency: number,
  total: number,
  runOne: (i: number) => Promise<void>,
): Promise<Row> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const t0 = performance.now();
        await runOne(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { scenario, concurrency, tasks_per_s: round(total / seconds), ...summarise(latencies) };
}

const api = await startRecordingApi({
  routes: [
    { method: 'GET', path: '/lookup', reply: { status: 200, body: { company: 'ByteDance', founded: 2012 } } },
  ],
});
const model = await startScriptedModel({
  respond: (request) =>
    (request.body.messages.at(-1) as { role?: string } | undefined)?.role === 'tool'
      ? { content: 'Founded in 2012.' }
      : { toolCalls: [{ name: 'lookup', arguments: { q: 'bytedance' } }] },
});
const mesh = await startMesh({
  executors: 1,
  env: { executor: { MAX_CONCURRENT_TASKS: '64' } },
});
const rows: Row[] = [];
try {
  await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/bench/credentials/MODEL_KEY`, {
    value: 'bench-key',
  });
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    name: 'lookup',
    description: 'Looks a company up.',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execution: { method: 'GET', base_url: `${api.url}/lookup`, param_placement: 'query' },
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'bench_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: ['lookup'],
  });

  // One subscription for every task's terminal event; each submission waits for its own.
  const nc = await connect({ servers: mesh.nats.url });
  const waiting = new Map<string, () => void>();
  const early = new Set<string>();
  nc.subscribe(`mesh.events.${MESH_ACCOUNT}.*`, {
    callback: (_error, msg) => {
      const event = msg.json<TaskEvent>();
      if (event.type !== 'done' && event.type !== 'error') return;
      if (event.type === 'error')
        process.stderr.write(`task ${event.trace_id} failed: ${JSON.stringify(event.data)}\n`);
      const resolve = waiting.get(event.trace_id);
      if (resolve) resolve();
      else early.add(event.trace_id);
    },
  });
  const meshTask = async (i: number): Promise<void> => {
    const response = await submit(mesh, {
      workflow_id: 'bench_agent',
      user_id: 'bench',
      messages: [{ role: 'user', content: `task ${i}` }],
    });
    const { trace_id } = (await response.json()) as { trace_id: string };
    if (early.delete(trace_id)) return;
    await new Promise<void>((resolve) => waiting.set(trace_id, resolve));
    waiting.delete(trace_id);
  };
  const plainTask = async (i: number): Promise<void> => {
    await runPlainTask(model.baseUrl, `${api.url}/lookup`, `task ${i}`);
  };

  await measure('warm-up', 8, 40, meshTask);
  rows.push(await measure('plain loop (floor)', 1, 200, plainTask));
  rows.push(await measure('plain loop (floor)', 64, 2000, plainTask));
  rows.push(await measure('mesh', 1, 100, meshTask));
  rows.push(await measure('mesh', 64, 640, meshTask));
  await nc.close();
} finally {
  await mesh.stop();
  await model.stop();
  await api.stop();
}

const out = fileURLToPath(new URL('../../../../.bench/', import.meta.url));
mkdirSync(out, { recursive: true });
writeFileSync(
  `${out}mesh.json`,
  `${JSON.stringify({ at: new Date().toISOString(), node: process.version, rows }, null, 2)}\n`,
);
console.table(rows);
console.log(`written to ${out}mesh.json`);
