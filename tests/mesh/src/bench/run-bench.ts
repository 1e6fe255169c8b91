/**
 * `npm run bench`: the measuring instrument of issues 9 and 27. Starts the whole mesh (NATS, gateway,
 * assembler, executor, recall as real processes), with the scripted models and tool APIs in a mocks'
 * process of their own, and runs in one run:
 * - the classic workloads (one tool call; a 2,000-delta answer; ten parallel tool calls) at C=1 and
 *   C=64 with zero-latency mocks, through the mesh (SSE and NATS clients) and as the in-process floor,
 *   on a mesh with 64 executor slots; recall with a warm cache; fan-out (thousands of SSE followers of
 *   a few running tasks on one gateway);
 * - on a second mesh with default settings: the backlog (one-tool at C=64 on the default slots) and the
 *   paced workload (a model at a real model's pace, 100 and 500 tasks in flight) against its floor;
 * - the model adapters' CPU per delta and a task's secret matcher (child processes), and the OpenAPI converter against samchon.
 * For every scenario: tasks/s, latency, CPU per task of every process (/proc), the ratios to the floor
 * (with and without the mocks' CPU), nats-server's traffic per task (/varz). Prints issue 27's targets
 * with the measured values first. Writes `.bench/mesh.md` and `.bench/mesh.json`. See README.md here.
 * Measures only: no target is asserted (the exit code says only whether tasks failed).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startRecordingApi, type NatsServer } from '@agentmesh/testkit';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { admin } from '../mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from '../mesh-harness.js';
import { benchAdapters, renderAdapterCpu, type AdapterCpu } from './adapter-cpu.js';
import {
  benchSecretMatcher,
  renderSecretMatcherCost,
  type SecretMatcherCost,
} from './secret-matcher-cost.js';
import { benchOptions, scaledTasks } from './bench-options.js';
import { startBenchMocks } from './bench-mocks.js';
import {
  FLOOR_CLIENT,
  medianOfPasses,
  renderMarkdown,
  withFloorRatios,
  type BenchRow,
} from './bench-report.js';
import { benchConverter } from './conversion-bench.js';
import { cpuProfileEnv, listCpuProfiles, profileThisProcess, summarizeCpuProfiles } from './cpu-profiles.js';
import { CpuMeter } from './cpu-meter.js';
import type { TaskOutcome } from './event-tally.js';
import { renderFanOut, runFanOut, type FanOutResult } from './fan-out.js';
import { runNatsTask, runSseTask } from './mesh-task-clients.js';
import {
  idleCpuMsPerS,
  medianOfPacedPasses,
  meshRss,
  renderPaced,
  runPacedPass,
  type PacedMeasures,
} from './paced-run.js';
import {
  PACED_ANSWER,
  PACED_STEADY_WORKLOAD,
  PACED_TASK_MS,
  PACED_TOOL_NAME,
  PACED_WORKLOAD,
  pacedUserMessage,
} from './paced-workload.js';
import { runPlainTask } from './plain-loop.js';
import { clockTicksPerSecond } from './process-cpu.js';
import { runPass, ScenarioKind, type Probes, type Scenario } from './scenario-run.js';
import { issue27Targets, renderTargets, TargetClient } from './targets.js';
import {
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

/** Sections besides the classic workloads, as BENCH_ONLY names them. */
const Section = {
  recall: 'recall',
  fanOut: 'fan-out',
  backlog: 'backlog',
  paced: PACED_WORKLOAD,
  adapters: 'adapters',
  secrets: 'secrets',
  converter: 'converter',
} as const;

/** Paced tasks per pass at BENCH_SCALE=1: three waves at 100 in flight, two at 500. */
const pacedTasksPerPass = (inFlight: number): number => inFlight * (inFlight >= 500 ? 2 : 3);
/** Fan-out at BENCH_SCALE=1: 20 running tasks, 100 SSE followers each. */
const FAN_OUT = { tasks: 20, followersPerTask: 100 };
/** SSE streams one caller may keep (the gateway's default SSE_MAX_STREAMS_PER_CALLER): keys are spread so none needs more. */
const STREAMS_PER_CALLER = 100;
/** The fan-out gateway's SSE_MAX_STREAMS: its default (1,000) is below the 2,000 followers. */
const FAN_OUT_MAX_STREAMS = 2_100;

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

const pidOf = (child: { pid?: number | undefined }): number => {
  if (child.pid === undefined) throw new Error('a service process has no pid');
  return child.pid;
};

const options = benchOptions();
const known = [...ALL_PLAN.map((entry) => entry.workload as string), ...Object.values(Section)];
const unknownNames = (options.only ?? []).filter((name) => !known.includes(name));
if (unknownNames.length > 0) {
  throw new Error(
    `BENCH_ONLY names no workload or section: ${unknownNames.join(', ')} (known: ${known.join(', ')})`,
  );
}
const selected = (name: string): boolean => options.only?.includes(name) ?? true;
const PLAN = ALL_PLAN.filter((entry) => selected(entry.workload));
const stopSelfProfile = options.cpuProfileDir ? await profileThisProcess(options.cpuProfileDir) : undefined;
const profileEnv = (service: string): Record<string, string> => cpuProfileEnv(options.cpuProfileDir, service);

// API keys of the account: enough that no caller needs more than its default share of SSE streams.
const mostStreams = Math.max(
  64,
  ...options.pacedInFlight,
  FAN_OUT.tasks * Math.max(1, Math.round(FAN_OUT.followersPerTask * options.scale)),
);
const apiKeys = Array.from(
  { length: Math.ceil(mostStreams / STREAMS_PER_CALLER) + 1 },
  () => `am_bench_${randomBytes(12).toString('hex')}`,
);
const apiKeysEnv = apiKeys.map((key) => `${key}=${MESH_ACCOUNT}`).join(',');

const mocks = await startBenchMocks();
say(`mocks' process: pid ${mocks.pid}`);
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

const extra: Record<string, unknown> = {};
const rows: BenchRow[] = [];
/** Every pass of every scenario, for the JSON: the table quotes their medians. */
const allPasses: BenchRow[] = [];
const pacedMeasures: PacedMeasures[] = [];
const allPacedPasses: PacedMeasures[] = [];
let fanOut: FanOutResult | undefined;
let natsVersion = 'unknown';
let natsMode = 'unknown';

/** The agents every mesh gets: `bench_agent` (zero-latency mocks) and `paced_agent` (the paced model and tool). */
async function provision(mesh: Mesh): Promise<void> {
  await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/bench/credentials/MODEL_KEY`, {
    value: 'bench-key',
  });
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    ...LOOKUP_TOOL,
    execution: { method: 'GET', base_url: mocks.toolUrl, param_placement: 'query' },
  });
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    ...LOOKUP_TOOL,
    name: PACED_TOOL_NAME,
    execution: { method: 'GET', base_url: mocks.pacedToolUrl, param_placement: 'query' },
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'bench_agent',
    model: { model_name: 'scripted', base_url: mocks.modelBaseUrl, api_key_credential: 'MODEL_KEY' },
    tools: [LOOKUP_TOOL.name],
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'paced_agent',
    model: { model_name: 'paced', base_url: mocks.pacedModelBaseUrl, api_key_credential: 'MODEL_KEY' },
    tools: [PACED_TOOL_NAME],
  });
}

/** CPU of every process of the mesh, and of the mocks'. */
async function meterOf(mesh: Mesh): Promise<CpuMeter> {
  const natsPid = await natsServerPid(mesh.nats);
  if (natsPid === undefined) say('WARNING: nats-server pid unknown: its CPU is not in the totals');
  return new CpuMeter(
    {
      ...(natsPid !== undefined ? { 'nats-server': [natsPid] } : {}),
      gateway: [pidOf(mesh.gateway.child)],
      assembler: [pidOf(mesh.assembler.child)],
      executor: mesh.executors
        .filter((executor) => executor.child.exitCode === null && executor.child.signalCode === null)
        .map((executor) => pidOf(executor.child)),
      ...(mesh.recall ? { recall: [pidOf(mesh.recall.child)] } : {}),
      mocks: [mocks.pid],
    },
    clockTicksPerSecond(),
  );
}

/** How the bench talks to one mesh: its clients, and the floor, which needs no mesh. */
function clientsOf(mesh: Mesh, nc: NatsConnection) {
  const submission = (workflow: string, text: string): Record<string, unknown> => ({
    workflow_id: workflow,
    user_id: 'bench',
    messages: [{ role: 'user', content: text }],
  });
  const meshTask = (workload: Workload, client: Client) => (i: number) =>
    client === Client.sse
      ? runSseTask(
          { gatewayUrl: mesh.gatewayUrl, apiKey: apiKeys[0]! },
          submission('bench_agent', userMessage(workload, i)),
          EXPECTED_ANSWER[workload],
        )
      : runNatsTask(
          nc,
          MESH_ACCOUNT,
          submission('bench_agent', userMessage(workload, i)),
          EXPECTED_ANSWER[workload],
        );
  let pacedCount = 0;
  const pacedTask = (client: Client) => (key: string) =>
    client === Client.sse
      ? // Spread over the keys: one caller keeps at most SSE_MAX_STREAMS_PER_CALLER streams.
        runSseTask(
          { gatewayUrl: mesh.gatewayUrl, apiKey: apiKeys[pacedCount++ % apiKeys.length]! },
          submission('paced_agent', pacedUserMessage(key)),
          PACED_ANSWER,
        )
      : runNatsTask(nc, MESH_ACCOUNT, submission('paced_agent', pacedUserMessage(key)), PACED_ANSWER);
  return { submission, meshTask, pacedTask };
}

const floorTask =
  (workload: Workload) =>
  async (i: number): Promise<TaskOutcome> => {
    const result = await runPlainTask({
      modelBaseUrl: mocks.modelBaseUrl,
      toolUrl: mocks.toolUrl,
      userText: userMessage(workload, i),
    });
    return {
      events: 0,
      messageChunks: result.messageChunks,
      firstChunkMs: result.firstChunkMs,
      ...(result.answer === EXPECTED_ANSWER[workload] ? {} : { failure: 'the floor got another answer' }),
    };
  };
const pacedFloorTask = async (key: string): Promise<TaskOutcome> => {
  const result = await runPlainTask({
    modelBaseUrl: mocks.pacedModelBaseUrl,
    toolUrl: mocks.pacedToolUrl,
    userText: pacedUserMessage(key),
  });
  return {
    events: 0,
    messageChunks: result.messageChunks,
    firstChunkMs: result.firstChunkMs,
    ...(result.answer === PACED_ANSWER ? {} : { failure: 'the paced floor got another answer' }),
  };
};

const logRow = (row: BenchRow, started: number): void =>
  say(
    `${row.workload} / ${row.client} / C=${row.concurrency}: ${row.tasks_per_s} tasks/s, p50 ${row.p50_ms} ms, ` +
      `${row.cpu_total_ms_per_task} CPU ms/task (own ${row.cpu_own_ms_per_task})${row.failed > 0 ? `, ${row.failed} FAILED` : ''} ` +
      `(${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );

async function measure(scenario: Scenario, probes: Probes): Promise<BenchRow> {
  const started = performance.now();
  const passes: BenchRow[] = [];
  for (let pass = 0; pass < options.repeat; pass++) passes.push(await runPass(scenario, probes));
  allPasses.push(...passes);
  const row = medianOfPasses(passes);
  logRow(row, started);
  return row;
}

/** Warm-up (not reported): JIT of every path, connections, caches. */
async function warmUp(
  probes: Probes,
  entries: readonly PlanEntry[],
  meshTask: ReturnType<typeof clientsOf>['meshTask'],
): Promise<void> {
  for (const entry of entries) {
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
}

// ── Mesh A: 64 executor slots (as the classic rows always ran); the classic workloads, recall, fan-out.
const runMeshA = PLAN.length > 0 || selected(Section.recall) || selected(Section.fanOut);
if (runMeshA) {
  const mesh = await startMesh({
    executors: 1,
    env: {
      gateway: {
        API_KEYS: apiKeysEnv,
        SSE_MAX_STREAMS: String(FAN_OUT_MAX_STREAMS),
        ...profileEnv('gateway'),
      },
      assembler: profileEnv('assembler'),
      executor: { MAX_CONCURRENT_TASKS: '64', ...profileEnv('executor') },
    },
    recall: {
      ONTOLOGY_QUERY_URL: upstreams.url,
      OPERATOR_INTEGRATION_URL: upstreams.url,
      ...profileEnv('recall'),
    },
  });
  natsVersion = await natsServerVersion(mesh.nats.monitorUrl).catch(() => 'unknown');
  natsMode = mesh.nats.mode;
  try {
    const meter = await meterOf(mesh);
    const probes = { meter, natsMonitorUrl: mesh.nats.monitorUrl, report: say };
    await provision(mesh);
    const nc = await connect({ servers: mesh.nats.url });
    const { meshTask, submission } = clientsOf(mesh, nc);

    say('mesh A (64 slots): warming up …');
    const warmUpStarted = performance.now();
    await warmUp(probes, PLAN, meshTask);
    say(`warm-up took ${((performance.now() - warmUpStarted) / 1000).toFixed(1)} s`);

    for (const entry of PLAN) {
      for (const concurrency of CONCURRENCIES) {
        const counts = entry.tasks[concurrency];
        rows.push(
          await measure(
            {
              workload: entry.workload,
              client: FLOOR_CLIENT,
              concurrency,
              tasks: scaledTasks(counts.floor, options.scale, concurrency),
              kind: ScenarioKind.floor,
              runTask: floorTask(entry.workload),
            },
            probes,
          ),
        );
        for (const client of entry.clients) {
          rows.push(
            await measure(
              {
                workload: entry.workload,
                client,
                concurrency,
                tasks: scaledTasks(counts.mesh, options.scale, concurrency),
                kind: ScenarioKind.meshTask,
                runTask: meshTask(entry.workload, client),
              },
              probes,
            ),
          );
        }
      }
    }

    if (selected(Section.recall)) {
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
        await measure(
          {
            workload: 'recall (warm cache)',
            client: 'NATS request',
            concurrency: 1,
            tasks: scaledTasks(500, options.scale, 1),
            kind: ScenarioKind.request,
            runTask: recallOnce,
          },
          probes,
        ),
      );
      extra.recall_upstream_calls_while_warm = upstreams.requests.length - upstreamCallsBefore;
    }

    if (selected(Section.fanOut)) {
      const plan = {
        tasks: FAN_OUT.tasks,
        followersPerTask: Math.max(1, Math.round(FAN_OUT.followersPerTask * options.scale)),
      };
      say(`fan-out: ${plan.tasks} paced tasks × ${plan.followersPerTask} SSE followers …`);
      const started = performance.now();
      fanOut = await runFanOut(plan, {
        gatewayUrl: mesh.gatewayUrl,
        apiKeys,
        gatewayPid: pidOf(mesh.gateway.child),
        meter,
        natsMonitorUrl: mesh.nats.monitorUrl,
        submission: (k) => submission('paced_agent', pacedUserMessage(`fan-${process.pid}-${k}`)),
        expectedAnswer: PACED_ANSWER,
        report: say,
      });
      say(
        `fan-out: ${fanOut.followers_ok}/${fanOut.followers} followers, ${fanOut.consumers_during} consumers, ` +
          `gateway ${fanOut.gateway_rss_mib} MiB (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );
    }
    await nc.close();
  } finally {
    await mesh.stop();
  }
}

// ── Mesh B: default settings; the backlog (one-tool on the default slots) and the paced workload.
const runMeshB = selected(Section.backlog) || selected(Section.paced);
if (runMeshB) {
  const mesh = await startMesh({
    executors: 1,
    env: {
      // Several API keys: 500 SSE streams of one caller would pass SSE_MAX_STREAMS_PER_CALLER (100).
      gateway: { API_KEYS: apiKeysEnv, ...profileEnv('gateway') },
      assembler: profileEnv('assembler'),
      executor: profileEnv('executor'),
    },
  });
  if (natsVersion === 'unknown')
    natsVersion = await natsServerVersion(mesh.nats.monitorUrl).catch(() => 'unknown');
  if (natsMode === 'unknown') natsMode = mesh.nats.mode;
  try {
    await provision(mesh);
    const nc = await connect({ servers: mesh.nats.url });
    const { meshTask, pacedTask } = clientsOf(mesh, nc);

    if (selected(Section.backlog)) {
      const meter = await meterOf(mesh);
      const probes = { meter, natsMonitorUrl: mesh.nats.monitorUrl, report: say };
      const oneTool = ALL_PLAN[0]!;
      say('mesh B (default settings): warming up one-tool …');
      await warmUp(probes, [oneTool], meshTask);
      for (const [client, label] of [
        [Client.sse, TargetClient.sseDefaultSlots],
        [Client.nats, TargetClient.natsDefaultSlots],
      ] as const) {
        rows.push(
          await measure(
            {
              workload: oneTool.workload,
              client: label,
              concurrency: 64,
              tasks: scaledTasks(oneTool.tasks[64].mesh, options.scale, 64),
              kind: ScenarioKind.meshTask,
              runTask: meshTask(oneTool.workload, client),
            },
            probes,
          ),
        );
      }
    }

    if (selected(Section.paced)) {
      if (options.pacedSlots !== undefined) {
        // A slot is held for a whole task, the model's waits included: with the default slots, all but
        // that many paced tasks would wait in the queue. Said in the report.
        say(`paced: executor restarted with MAX_CONCURRENT_TASKS=${options.pacedSlots} (else defaults)`);
        await mesh.executors[0]!.stop('SIGTERM');
        await mesh.addExecutor({ MAX_CONCURRENT_TASKS: String(options.pacedSlots) });
      }
      extra.paced_executor_max_concurrent_tasks = options.pacedSlots ?? 'default';
      const meter = await meterOf(mesh);
      const live = mesh.executors.filter((e) => e.child.exitCode === null && e.child.signalCode === null);
      const pacedProbes = {
        meter,
        natsMonitorUrl: mesh.nats.monitorUrl,
        report: say,
        nc,
        pacedModelBaseUrl: mocks.pacedModelBaseUrl,
        executorPids: live.map((e) => pidOf(e.child)),
        gatewayPid: pidOf(mesh.gateway.child),
        idleMsPerS: 0,
        rssAtRest: { executor: 0, gateway: 0 },
      };
      if (options.warmUpTasks > 0) {
        say('paced: warming up (one wave per client) …');
        // Few in flight, two waves: JIT-compiled paths without growing the heap to a measured size.
        const warmInFlight = Math.min(10, ...options.pacedInFlight);
        for (const client of [Client.sse, Client.nats]) {
          await runPacedPass(
            {
              workload: `${PACED_WORKLOAD} warm-up`,
              client,
              inFlight: warmInFlight,
              tasks: warmInFlight * 2,
              kind: ScenarioKind.meshTask,
              runTask: pacedTask(client),
              sseStreams: client === Client.sse,
              mesh: true,
              idleReturn: false,
            },
            pacedProbes,
          );
        }
      }
      await meter.settle({ maxMs: 10_000 });
      pacedProbes.idleMsPerS = await idleCpuMsPerS(meter);
      pacedProbes.rssAtRest = meshRss(pacedProbes.executorPids, pacedProbes.gatewayPid);
      say(`paced: the mesh at rest uses ${pacedProbes.idleMsPerS} ms CPU/s`);
      // Each count in flight twice: in waves (every task of a wave submitted in the same millisecond, the
      // worst burst) and with steady arrivals (the first tasks spread over a task's own time).
      const arrivals = [
        { workload: PACED_WORKLOAD, spacing: (_: number): number | undefined => undefined },
        { workload: PACED_STEADY_WORKLOAD, spacing: (inFlight: number) => PACED_TASK_MS / inFlight },
      ];
      for (const inFlight of options.pacedInFlight) {
        const tasks = scaledTasks(pacedTasksPerPass(inFlight), options.scale, inFlight);
        for (const { workload, spacing } of arrivals) {
          const startSpacingMs = spacing(inFlight);
          for (const client of [FLOOR_CLIENT, Client.sse, Client.nats] as const) {
            const started = performance.now();
            const passes: { row: BenchRow; paced: PacedMeasures }[] = [];
            for (let pass = 0; pass < options.repeat; pass++) {
              passes.push(
                await runPacedPass(
                  {
                    workload,
                    client,
                    inFlight,
                    tasks,
                    ...(startSpacingMs === undefined ? {} : { startSpacingMs }),
                    kind: client === FLOOR_CLIENT ? ScenarioKind.floor : ScenarioKind.meshTask,
                    runTask: client === FLOOR_CLIENT ? pacedFloorTask : pacedTask(client),
                    sseStreams: client === Client.sse,
                    mesh: client !== FLOOR_CLIENT,
                  },
                  pacedProbes,
                ),
              );
            }
            allPasses.push(...passes.map((p) => p.row));
            allPacedPasses.push(...passes.map((p) => p.paced));
            const row = medianOfPasses(passes.map((p) => p.row));
            const paced = medianOfPacedPasses(passes.map((p) => p.paced));
            rows.push(row);
            pacedMeasures.push(paced);
            logRow(row, started);
            say(
              `  ttft overhead p99 ${paced.ttft_overhead_p99_ms} ms, e2e overhead p99 ${paced.e2e_overhead_p99_ms} ms, ` +
                `executor ${paced.executor_rss_kib_per_task} KiB/task, idle again after ${paced.idle_return_s} s`,
            );
          }
        }
      }
    }
    await nc.close();
  } finally {
    await mesh.stop();
  }
}
await mocks.stop();
await upstreams.stop();
if (stopSelfProfile) await stopSelfProfile();

let adapters: AdapterCpu | undefined;
if (selected(Section.adapters)) {
  const calls = Math.max(3, Math.round(20 * options.scale));
  say(`model adapters: 2000 deltas × ${calls} calls each (child process) …`);
  adapters = await benchAdapters(2_000, calls).catch((error: unknown) => {
    say(`model adapters' bench FAILED to run: ${String(error)}`);
    return undefined;
  });
  extra.model_adapters = adapters
    ? { deltas: adapters.deltas, calls: adapters.calls, rows: adapters.rows }
    : 'failed';
}
let secretMatcher: SecretMatcherCost | undefined;
if (selected(Section.secrets)) {
  say("a task's secret matcher: heap, build and scan (child process) …");
  secretMatcher = await benchSecretMatcher().catch((error: unknown) => {
    say(`secret matcher's bench FAILED to run: ${String(error)}`);
    return undefined;
  });
  extra.secret_matcher = secretMatcher ?? 'failed';
}
const converter = selected(Section.converter) ? await benchConverter(options.repeat) : undefined;
extra.openapi_converter = selected(Section.converter)
  ? (converter ?? 'skipped: no ../shared/openapi-corpus')
  : 'not selected';

const reported = withFloorRatios(rows);
const failed = reported.reduce((sum, row) => sum + row.failed, 0) + (fanOut?.followers_failed ?? 0);
const targets = issue27Targets({
  rows: reported,
  paced: pacedMeasures,
  fanOut,
  converter: converter
    ? { passed: converter.rows.filter((row) => row.pass).length, total: converter.rows.length }
    : undefined,
  adapters: adapters?.rows,
  pacedWorkload: PACED_WORKLOAD,
  pacedSteadyWorkload: PACED_STEADY_WORKLOAD,
});
const header = [
  `# agentmesh bench — ${new Date().toISOString()}`,
  '',
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}; nats-server ${natsVersion} (${natsMode}). ` +
    `${options.repeat === 1 ? 'Single pass per scenario' : `Median of ${options.repeat} passes per scenario`}, ` +
    `task counts × ${options.scale}. × floor = total CPU / the in-process floor's, same workload and C; ` +
    '× own floor = the same without the mocks’ process on either side.',
  '',
  '## Issue 27 targets',
  '',
  renderTargets(targets),
  '',
  'Reported only: the exit code says nothing about targets (only whether tasks failed).',
  '',
  '## Scenarios',
  '',
  '',
].join('\n');
const pacedSection =
  pacedMeasures.length > 0
    ? [
        '',
        `## Paced workload (${PACED_WORKLOAD}: in waves, and with steady arrivals)`,
        '',
        `Mesh with default settings${
          options.pacedSlots !== undefined
            ? `, except the executor's MAX_CONCURRENT_TASKS=${options.pacedSlots} (set by BENCH_PACED_SLOTS; the default is 512)`
            : ' (MAX_CONCURRENT_TASKS at its default)'
        }; SSE callers spread over ${apiKeys.length} API keys (SSE_MAX_STREAMS_PER_CALLER 100).`,
        '',
        renderPaced(pacedMeasures),
      ].join('\n')
    : '';
const footer = [
  pacedSection,
  ...(fanOut
    ? [
        '',
        '## Fan-out',
        '',
        `One gateway with SSE_MAX_STREAMS=${FAN_OUT_MAX_STREAMS} (default 1,000, below 2,000 followers); followers spread over ${apiKeys.length} API keys.`,
        '',
        renderFanOut(fanOut),
      ]
    : []),
  ...(adapters ? ['', renderAdapterCpu(adapters)] : []),
  ...(secretMatcher ? ['', renderSecretMatcherCost(secretMatcher)] : []),
  '',
  converter?.markdown ??
    (selected(Section.converter)
      ? 'OpenAPI converter: skipped (no ../shared/openapi-corpus)'
      : 'OpenAPI converter: not selected (BENCH_ONLY)'),
  ...(extra.recall_upstream_calls_while_warm !== undefined
    ? [`Upstream calls during the warm recall runs: ${String(extra.recall_upstream_calls_while_warm)}`]
    : []),
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
      nats_mode: natsMode,
      passes: options.repeat,
      scale: options.scale,
      nats_server: natsVersion,
      targets,
      rows: reported,
      paced: pacedMeasures,
      fan_out: fanOut ?? null,
      ...extra,
      all_passes: allPasses,
      all_paced_passes: allPacedPasses,
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
  const summaries = summarizeCpuProfiles(options.cpuProfileDir);
  writeFileSync(
    `${out}profiles.md`,
    `# Where each process's CPU went (${new Date().toISOString()})\n\n${summaries}`,
  );
  console.log(`${summaries}\nwritten to ${out}profiles.md`);
}
if (failed > 0) {
  say(`\n⚠ ${failed} tasks FAILED (an error event, a broken guarantee or a refused call): see above.`);
  process.exitCode = 1;
}
