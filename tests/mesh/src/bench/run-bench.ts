/**
 * `npm run bench`: end-to-end throughput (tasks/s) and latency (p50/p99, submit → done) of a one-tool
 * task through the whole mesh with the scripted model at zero latency, at concurrency 1 and 64, and
 * the same task as a plain in-process loop (no NATS) in the same run as the floor; recall latency with
 * a warm cache (a real recall service, recording upstreams); and OpenAPI conversion throughput over
 * the shared corpus; for each scenario also the whole machine's busy CPU per task. Prints a table and
 * writes the numbers to .bench/mesh.json. Measures only: there are no targets yet.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { TaskEvent } from '@agentmesh/protocol';
import { startRecordingApi, startScriptedModel } from '@agentmesh/testkit';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { admin, submit } from '../mesh-client.js';
import { MESH_ACCOUNT, startMesh } from '../mesh-harness.js';
import { benchConversion } from './conversion-bench.js';
import { machineBusyCpuMs } from './machine-cpu.js';
import { runPlainTask } from './plain-loop.js';
import { summarise, round, type LatencySummary } from './stats.js';

interface Row extends LatencySummary {
  scenario: string;
  concurrency: number;
  tasks_per_s: number;
  /** Busy CPU of the whole machine per task (every process: NATS, services, client); see machine-cpu.ts. */
  cpu_ms_per_task?: number;
}

async function measure(
  scenario: string,
  concurrency: number,
  total: number,
  runOne: (i: number) => Promise<void>,
): Promise<Row> {
  const latencies: number[] = [];
  let next = 0;
  const cpuBefore = machineBusyCpuMs();
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
  const cpuAfter = machineBusyCpuMs();
  return {
    scenario,
    concurrency,
    tasks_per_s: round(total / seconds),
    ...(cpuBefore === undefined || cpuAfter === undefined
      ? {}
      : { cpu_ms_per_task: round((cpuAfter - cpuBefore) / total) }),
    ...summarise(latencies),
  };
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
// Stand-ins for recall's two upstreams, so the warm-cache recall latency can be measured.
const upstreams = await startRecordingApi({
  routes: [
    {
      method: 'POST',
      path: '/api/ontology-query/v1/knowledge-networks/:kn/action-types/:at',
      reply: {
        status: 200,
        body: {
          actions: [{ parameters: { 'x-account-id': 'bench' }, dynamic_params: {} }],
          action_source: { type: 'tool', box_id: 'box', tool_id: 'tool' },
        },
      },
    },
    {
      method: 'GET',
      path: '/api/agent-operator-integration/internal-v1/tool-box/:box/tool/:tool',
      reply: {
        status: 200,
        body: {
          name: 'search_object_instance',
          description: 'Queries object instances.',
          api_spec: {
            parameters: [{ name: 'kn_id', in: 'path', required: true, schema: { type: 'string' } }],
            request_body: {
              content: {
                'application/json': {
                  schema: { type: 'object', properties: { limit: { type: 'integer' } } },
                },
              },
            },
          },
        },
      },
    },
  ],
});
const mesh = await startMesh({
  executors: 1,
  env: { executor: { MAX_CONCURRENT_TASKS: '64' } },
  recall: { ONTOLOGY_QUERY_URL: upstreams.url, OPERATOR_INTEGRATION_URL: upstreams.url },
});
const extra: Record<string, unknown> = {};
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

  // Recall with a warm cache: the same request again and again (the first one fills the caches).
  const recallHeaders = natsHeaders();
  recallHeaders.set('x-account-id', MESH_ACCOUNT);
  recallHeaders.set('x-account-type', 'user');
  const recallBody = JSON.stringify({ kn_id: 'kn', at_id: 'at', unique_identity: { id: 'x1' } });
  const recallOnce = async (): Promise<void> => {
    const reply = await nc.request('mesh.recall.actions', recallBody, {
      headers: recallHeaders,
      timeout: 10_000,
    });
    if (reply.headers?.get('Nats-Service-Error-Code')) throw new Error(`recall failed: ${reply.string()}`);
  };
  await recallOnce();
  const upstreamCallsBefore = upstreams.requests.length;
  rows.push(await measure('recall (warm cache)', 1, 500, recallOnce));
  extra.recall_upstream_calls_while_warm = upstreams.requests.length - upstreamCallsBefore;
  await nc.close();
} finally {
  await mesh.stop();
  await model.stop();
  await api.stop();
  await upstreams.stop();
}
extra.openapi_conversion = (await benchConversion()) ?? 'skipped: no ../shared/openapi-corpus';

const out = fileURLToPath(new URL('../../../../.bench/', import.meta.url));
mkdirSync(out, { recursive: true });
writeFileSync(
  `${out}mesh.json`,
  `${JSON.stringify({ at: new Date().toISOString(), node: process.version, rows, ...extra }, null, 2)}\n`,
);
console.table(rows);
console.log('OpenAPI conversion over the corpus:', extra.openapi_conversion);
console.log('upstream calls during the warm recall runs:', extra.recall_upstream_calls_while_warm);
console.log(`written to ${out}mesh.json`);
