/**
 * `npm run bench`: the measuring instrument of issue 9. Starts the whole mesh (NATS, gateway,
 * assembler, executor, recall as real processes) with a scripted model at zero latency and a recording
 * API, and runs each workload (one tool call; a 2,000-delta answer; ten parallel tool calls) at C=1 and
 * C=64, through the mesh (SSE and NATS clients) and as the in-process floor, in the same run. For every
 * scenario: tasks/s, latency, CPU per task of every process (/proc) and in total, the ratio to the floor,
 * and nats-server's messages and bytes per task (/varz). Also recall latency with a warm cache and
 * OpenAPI conversion throughput. Writes `.bench/mesh.md` and `.bench/mesh.json`. See README.md here.
 * Measures only: no targets are asserted.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startRecordingApi, startScriptedModel, type NatsServer } from '@agentmesh/testkit';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { admin } from '../mesh-client.js';
import { MESH_ACCOUNT, startMesh } from '../mesh-harness.js';
import { benchOptions, scaledTasks } from './bench-options.js';
import {
  FLOOR_CLIENT,
  medianOfPasses,
  renderMarkdown,
  withFloorRatios,
  type BenchRow,
} from './bench-report.js';
import { benchConverter } from './conversion-bench.js';
import { cpuProfileEnv, listCpuProfiles, profileThisProcess } from './cpu-profiles.js';
import { CpuMeter } from './cpu-meter.js';
import type { TaskOutcome } from './event-tally.js';
import { runNatsTask, runSseTask } from './mesh-task-clients.js';
import { runPlainTask } from './plain-loop.js';
import { clockTicksPerSecond } from './process-cpu.js';
import { runPass, ScenarioKind, type Scenario } from './scenario-run.js';
import {
  benchReply,
  LONG_ANSWER,
  LOOKUP_TOOL,
  ONE_TOOL_ANSWER,
  TEN_TOOLS_ANSWER,
  userMessage,
  Workload,
} from './workloads.js';

const Client = { sse: 'SSE', nats: 'NATS' } as const;
type Client = (typeof Client)[keyof typeof Client];

interface PlanEntry {
  workload: Workload;
  clients: readonly Client[];
  /** Tasks per pass at BENCH_SCALE=1, by concurrency: the floor's and each mesh client's. */
  tasks: Record<1 | 64, { floor: number; mesh: number }>;
}

// Sized so that the whole run stays within about six minutes on a 2-core machine.
const ALL_PLAN: readonly PlanEntry[] = [
  {
    workload: Workload.oneTool,
    clients: [Client.sse, Client.nats],
    tasks: { 1: { floor: 200, mesh: 100 }, 64: { floor: 2000, mesh: 640 } },
  },
  {
    workload: Workload.longAnswer,
    clients: [Client.sse],
    tasks: { 1: { floor: 20, mesh: 10 }, 64: { floor: 128, mesh: 64 } },
  },
  {
    workload: Workload.tenTools,
    clients: [Client.sse],
    tasks: { 1: { floor: 100, mesh: 50 }, 64: { floor: 640, mesh: 320 } },
  },
];
const CONCURRENCIES = [1, 64] as const;

const EXPECTED_ANSWER: Record<Workload, string> = {
  [Workload.oneTool]: ONE_TOOL_ANSWER,
  [Workload.longAnswer]: LONG_ANSWER,
  [Workload.tenTools]: TEN_TOOLS_ANSWER,
};

const say = (line: string): void => void process.stderr.write(`${line}\n`);

/** nats-server's pid on this host: its own in process mode; in container mode, the container's init (it is nats-server). */
async function natsServerPid(nats: NatsServer): Promise<number | undefined> {
  if (nats.pid !== undefined) return nats.pid;
  if (nats.containerId === undefined) return undefined;
  const { stdout } = await promisify(execFile)('docker', [
    'inspect',
    '-f',
    '{{.State.Pid}}',
    nats.containerId,
  ]);
  const pid = Number(stdout.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** The version nats-server reports on /varz. */
async function natsServerVersion(monitorUrl: string): Promise<string> {
  const response = await fetch(`${monitorUrl}/varz`, { signal: AbortSignal.timeout(5_000) });
  const { version } = (await response.json()) as { version?: unknown };
  return typeof version === 'string' ? version : 'unknown';
}

const options = benchOptions();
const unknownWorkloads = (options.only ?? []).filter(
  (name) => !ALL_PLAN.some((entry) => entry.workload === name),
);
if (unknownWorkloads.length > 0) {
  throw new Error(
    `BENCH_ONLY names no workload: ${unknownWorkloads.join(', ')} (workloads: ${ALL_PLAN.map((entry) => entry.workload).join(', ')})`,
  );
}
const PLAN = ALL_PLAN.filter((entry) => options.only?.includes(entry.workload) ?? true);
const stopSelfProfile = options.cpuProfileDir ? await profileThisProcess(options.cpuProfileDir) : undefined;
const profileEnv = (service: string): Record<string, string> => cpuProfileEnv(options.cpuProfileDir, service);

const api = await startRecordingApi({
  routes: [
    { method: 'GET', path: '/lookup', reply: { status: 200, body: { company: 'ByteDance', founded: 2012 } } },
  ],
});
const model = await startScriptedModel({ respond: benchReply });
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
  env: {
    gateway: profileEnv('gateway'),
    assembler: profileEnv('assembler'),
    executor: { MAX_CONCURRENT_TASKS: '64', ...profileEnv('executor') },
  },
  recall: {
    ONTOLOGY_QUERY_URL: upstreams.url,
    OPERATOR_INTEGRATION_URL: upstreams.url,
    ...profileEnv('recall'),
  },
});

const extra: Record<string, unknown> = {};
const rows: BenchRow[] = [];
/** Every pass of every scenario, for the JSON: the table quotes their medians. */
const allPasses: BenchRow[] = [];
const natsVersion = await natsServerVersion(mesh.nats.monitorUrl).catch(() => 'unknown');
try {
  const natsPid = await natsServerPid(mesh.nats);
  if (natsPid === undefined) say('WARNING: nats-server pid unknown: its CPU is not in the totals');
  const pidOf = (child: { pid?: number | undefined }): number => {
    if (child.pid === undefined) throw new Error('a service process has no pid');
    return child.pid;
  };
  const meter = new CpuMeter(
    {
      ...(natsPid !== undefined ? { 'nats-server': [natsPid] } : {}),
      gateway: [pidOf(mesh.gateway.child)],
      assembler: [pidOf(mesh.assembler.child)],
      executor: mesh.executors.map((executor) => pidOf(executor.child)),
      ...(mesh.recall ? { recall: [pidOf(mesh.recall.child)] } : {}),
    },
    clockTicksPerSecond(),
  );
  const probes = { meter, natsMonitorUrl: mesh.nats.monitorUrl, report: say };

  await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/bench/credentials/MODEL_KEY`, {
    value: 'bench-key',
  });
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    ...LOOKUP_TOOL,
    execution: { method: 'GET', base_url: `${api.url}/lookup`, param_placement: 'query' },
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'bench_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: [LOOKUP_TOOL.name],
  });

  const nc = await connect({ servers: mesh.nats.url });
  const sseTarget = { gatewayUrl: mesh.gatewayUrl, apiKey: mesh.apiKey };
  const submission = (workload: Workload, i: number): Record<string, unknown> => ({
    workflow_id: 'bench_agent',
    user_id: 'bench',
    messages: [{ role: 'user', content: userMessage(workload, i) }],
  });
  const floorTask =
    (workload: Workload) =>
    async (i: number): Promise<TaskOutcome> => {
      const result = await runPlainTask({
        modelBaseUrl: model.baseUrl,
        toolUrl: `${api.url}/lookup`,
        userText: userMessage(workload, i),
      });
      return {
        events: 0,
        messageChunks: result.messageChunks,
        firstChunkMs: result.firstChunkMs,
        ...(result.answer === EXPECTED_ANSWER[workload] ? {} : { failure: 'the floor got another answer' }),
      };
    };
  const meshTask = (workload: Workload, client: Client) => (i: number) =>
    client === Client.sse
      ? runSseTask(sseTarget, submission(workload, i), EXPECTED_ANSWER[workload])
      : runNatsTask(nc, MESH_ACCOUNT, submission(workload, i), EXPECTED_ANSWER[workload]);

  const measure = async (scenario: Scenario): Promise<BenchRow> => {
    const started = performance.now();
    const passes: BenchRow[] = [];
    for (let pass = 0; pass < options.repeat; pass++) passes.push(await runPass(scenario, probes));
    allPasses.push(...passes);
    const row = medianOfPasses(passes);
    say(
      `${row.workload} / ${row.client} / C=${row.concurrency}: ${row.tasks_per_s} tasks/s, p50 ${row.p50_ms} ms, ` +
        `${row.cpu_total_ms_per_task} CPU ms/task${row.failed > 0 ? `, ${row.failed} FAILED` : ''} ` +
        `(${((performance.now() - started) / 1000).toFixed(1)} s)`,
    );
    return row;
  };

  // Warm-up (not reported): JIT of every path, connections, caches.
  say('warming up …');
  const warmUpStarted = performance.now();
  for (const entry of PLAN) {
    const warm = Math.max(
      1,
      entry.workload === Workload.longAnswer ? Math.round(options.warmUpTasks / 10) : options.warmUpTasks,
    );
    await runPass(
      {
        workload: entry.workload,
        client: FLOOR_CLIENT,
        concurrency: 4,
        tasks: warm,
        kind: ScenarioKind.floor,
        runTask: floorTask(entry.workload),
      },
      probes,
    );
    for (const client of entry.clients) {
      await runPass(
        {
          workload: entry.workload,
          client,
          concurrency: 8,
          tasks: warm,
          kind: ScenarioKind.meshTask,
          runTask: meshTask(entry.workload, client),
        },
        probes,
      );
    }
  }

  say(`warm-up took ${((performance.now() - warmUpStarted) / 1000).toFixed(1)} s`);

  for (const entry of PLAN) {
    for (const concurrency of CONCURRENCIES) {
      const counts = entry.tasks[concurrency];
      rows.push(
        await measure({
          workload: entry.workload,
          client: FLOOR_CLIENT,
          concurrency,
          tasks: scaledTasks(counts.floor, options.scale, concurrency),
          kind: ScenarioKind.floor,
          runTask: floorTask(entry.workload),
        }),
      );
      for (const client of entry.clients) {
        rows.push(
          await measure({
            workload: entry.workload,
            client,
            concurrency,
            tasks: scaledTasks(counts.mesh, options.scale, concurrency),
            kind: ScenarioKind.meshTask,
            runTask: meshTask(entry.workload, client),
          }),
        );
      }
    }
  }

  // Recall with a warm cache: the same request again and again (the first one fills the caches).
  const recallHeaders = natsHeaders();
  recallHeaders.set('x-account-id', MESH_ACCOUNT);
  recallHeaders.set('x-account-type', 'user');
  const recallBody = JSON.stringify({ kn_id: 'kn', at_id: 'at', unique_identity: { id: 'x1' } });
  const recallOnce = async (): Promise<TaskOutcome> => {
    const reply = await nc.request('mesh.recall.actions', recallBody, {
      headers: recallHeaders,
      timeout: 10_000,
    });
    const failed = reply.headers?.get('Nats-Service-Error-Code');
    return {
      events: 0,
      messageChunks: 0,
      firstChunkMs: undefined,
      ...(failed ? { failure: `recall failed: ${reply.string()}` } : {}),
    };
  };
  await recallOnce();
  const upstreamCallsBefore = upstreams.requests.length;
  rows.push(
    await measure({
      workload: 'recall (warm cache)',
      client: 'NATS request',
      concurrency: 1,
      tasks: scaledTasks(500, options.scale, 1),
      kind: ScenarioKind.request,
      runTask: recallOnce,
    }),
  );
  extra.recall_upstream_calls_while_warm = upstreams.requests.length - upstreamCallsBefore;
  await nc.close();
} finally {
  await mesh.stop();
  await model.stop();
  await api.stop();
  await upstreams.stop();
}
if (stopSelfProfile) await stopSelfProfile();
const converter = await benchConverter(options.repeat);
extra.openapi_converter = converter ?? 'skipped: no ../shared/openapi-corpus';

const reported = withFloorRatios(rows);
const failed = reported.reduce((sum, row) => sum + row.failed, 0);
const header = [
  `# agentmesh bench — ${new Date().toISOString()}`,
  '',
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}; nats-server ${natsVersion} (${mesh.nats.mode}). ` +
    `${options.repeat === 1 ? 'Single pass per scenario' : `Median of ${options.repeat} passes per scenario`}, ` +
    `task counts × ${options.scale}. × floor = total CPU / the in-process floor's, same workload and C.`,
  '',
].join('\n');
const footer = [
  '',
  converter?.markdown ?? 'OpenAPI converter: skipped (no ../shared/openapi-corpus)',
  `Upstream calls during the warm recall runs: ${String(extra.recall_upstream_calls_while_warm)}`,
  ...(failed > 0 ? ['', `**⚠ ${failed} tasks FAILED — the numbers above are not a clean run.**`] : []),
  '',
].join('\n');
const markdown = `${header}${renderMarkdown(reported)}\n${footer}`;

const out = fileURLToPath(new URL('../../../../.bench/', import.meta.url));
mkdirSync(out, { recursive: true });
writeFileSync(`${out}mesh.md`, markdown);
writeFileSync(
  `${out}mesh.json`,
  `${JSON.stringify(
    {
      at: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      nats_mode: mesh.nats.mode,
      passes: options.repeat,
      scale: options.scale,
      nats_server: natsVersion,
      rows: reported,
      ...extra,
      all_passes: allPasses,
    },
    null,
    2,
  )}\n`,
);
console.log(markdown);
console.log(`written to ${out}mesh.md and ${out}mesh.json`);
if (options.cpuProfileDir) {
  const profiles = listCpuProfiles(options.cpuProfileDir);
  console.log(`CPU profiles in ${options.cpuProfileDir}:\n${profiles.map((file) => `  ${file}`).join('\n')}`);
}
if (failed > 0) {
  say(`\n⚠ ${failed} tasks FAILED (an error event, a broken guarantee or a refused call): see above.`);
  process.exitCode = 1;
}
