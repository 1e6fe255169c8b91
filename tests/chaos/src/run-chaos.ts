/**
 * `npm run chaos` (and `chaos:ci`): the chaos ledger of issue 12. Starts a 3-node JetStream cluster,
 * 2 gateways, 2 assemblers and 3 executors as real processes, a scripted model that calls a tool and
 * then streams a known answer, and a tool API that records every call by idempotency key. Submits
 * tasks from concurrent clients while a driver SIGKILLs service processes and kills or pauses NATS
 * nodes, then judges every task and side effect from the stored event log and the tool API's records.
 * Prints the ledger, writes it as JSON to `.chaos/` at the repo root, and exits non-zero when a check
 * fails. See README.md here.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { Streams, type TaskStatusRecord } from '@agentmesh/protocol';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { chaosOptions } from './chaos-options.js';
import { CHAOS_ACCOUNT, startChaosMesh } from './chaos-mesh.js';
import { BOOK_TOOL, callsByKey, expectedAnswer, startBookingApi, startChaosModel } from './chaos-workload.js';
import { driveFaults, type FaultRecord } from './fault-driver.js';
import { judgeLedger, statusDisagreement } from './ledger/ledger-checks.js';
import { renderLedger, type LedgerRun } from './ledger/ledger-report.js';
import { recoveryTimes, takeoverTimes } from './ledger/recovery.js';
import { CoreFollowers, runLoad, TerminalWatcher, type SubmittedTask } from './load-clients.js';
import { readAccountEvents, taskConsumers, workQueueDepth, workQueueLeftovers } from './stored-log.js';

const say = (line: string): void =>
  void process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const WORKFLOW_ID = 'chaos_agent';
/** The executors' MAX_DELIVER default (services/executor/src/config.ts). */
const DEFAULT_MAX_DELIVER = 3;

const options = chaosOptions();
const started = Date.now();
const runId = randomBytes(4).toString('hex');
say(`profile ${options.profile}: ${JSON.stringify(options)}`);

const timing = {
  modelLatencyMs: options.modelLatencyMs,
  chunkDelayMs: options.chunkDelayMs,
  toolDelayMs: options.toolDelayMs,
};
const model = await startChaosModel(timing);
const api = await startBookingApi(timing);
const executorEnv: Record<string, string> = {};
if (options.executorAckWaitMs !== '') executorEnv.ACK_WAIT_MS = options.executorAckWaitMs;
if (options.executorAckProgressMs !== '') executorEnv.ACK_PROGRESS_MS = options.executorAckProgressMs;
say('starting a 3-node JetStream cluster and 7 service processes …');
const mesh = await startChaosMesh({ executorEnv });
const nc = await connect({ servers: mesh.cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
// The tasks' core-NATS followers on a connection of their own, as a tenant's would be.
const followerNc = await connect({
  servers: mesh.cluster.urls,
  maxReconnectAttempts: -1,
  reconnectTimeWait: 250,
});

try {
  const adminCall = async (method: string, path: string, body: unknown): Promise<void> => {
    const response = await fetch(`${mesh.gatewayUrls[0]}/v1/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${mesh.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
  };
  await adminCall('PUT', `/accounts/${CHAOS_ACCOUNT}/users/chaos/credentials/MODEL_KEY`, {
    value: 'chaos-key',
  });
  await adminCall('POST', '/plugins', {
    schema_version: 'v1',
    ...BOOK_TOOL,
    execution: { method: 'GET', base_url: `${api.url}/book`, param_placement: 'query' },
  });
  await adminCall('POST', '/agents', {
    workflow_id: WORKFLOW_ID,
    model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: [BOOK_TOOL.name],
  });

  const watcher = new TerminalWatcher(nc, CHAOS_ACCOUNT);
  const followers = new CoreFollowers(followerNc, CHAOS_ACCOUNT);
  const loadPlan = {
    followers,
    gatewayUrls: mesh.gatewayUrls,
    apiKey: mesh.apiKey,
    workflowId: WORKFLOW_ID,
    taskWaitMs: 60_000,
    submitRetryMs: 60_000,
  };

  // One task before any fault: a setup mistake shows here, not as hundreds of lost tasks.
  const [probe] = await runLoad(
    { ...loadPlan, runId: `${runId}-probe`, clients: 1, tasks: 1, keepGoing: () => false },
    watcher,
  );
  if (!probe?.accepted || !watcher.ended(probe.traceId)) {
    throw new Error(`the probe task before the faults did not finish: ${JSON.stringify(probe)}`);
  }
  say('probe task done; load and faults start');

  let faultsDone = false;
  let faultsEndedAt = 0;
  const faults: Promise<FaultRecord> = driveFaults(options, mesh.slots, mesh.cluster, say).finally(() => {
    faultsDone = true;
    faultsEndedAt = Date.now();
    say('faults done');
  });
  const submitted: SubmittedTask[] = [];
  const progress = setInterval(() => say(`… ${submitted.length} tasks submitted`), 10_000);
  const load = runLoad(
    { ...loadPlan, runId, clients: options.clients, tasks: options.tasks, keepGoing: () => !faultsDone },
    watcher,
    submitted,
  );
  const [record] = await Promise.all([faults, load]);
  clearInterval(progress);
  const tasks = [probe, ...submitted];
  say(
    `${submitted.length} tasks submitted; waiting up to ${options.settleMs / 1000} s for every accepted task to end`,
  );

  // The bound: every accepted task must end within settleMs of the last fault.
  const js = jetstream(nc);
  const jsm = await js.jetstreamManager();
  const accepted = tasks.filter((task) => task.accepted).map((task) => task.traceId);
  const endedInStore = new Set<string>();
  let lastStoreRead = 0;
  for (;;) {
    const open = accepted.filter((traceId) => !watcher.ended(traceId) && !endedInStore.has(traceId));
    if (open.length === 0 || Date.now() - faultsEndedAt > options.settleMs) break;
    if (Date.now() - lastStoreRead > 10_000) {
      // The live subscription can miss a terminal event while a node is down; the store cannot.
      lastStoreRead = Date.now();
      const stored = await readAccountEvents(js, CHAOS_ACCOUNT);
      for (const [traceId, events] of stored.eventsByTrace) {
        if (events.some((event) => event.type === 'done' || event.type === 'error'))
          endedInStore.add(traceId);
      }
      say(`${open.length} accepted tasks not ended yet`);
      continue;
    }
    await sleep(500);
  }
  const settleS = (Date.now() - faultsEndedAt) / 1000;

  // A work queue keeps a task until it is acknowledged; give the last acks a moment to land.
  for (let waited = 0; waited < 20_000 && (await workQueueDepth(jsm)) > 0; waited += 1_000)
    await sleep(1_000);
  const leftovers = await workQueueLeftovers(jsm);
  const consumers = await taskConsumers(jsm);
  const stored = await readAccountEvents(js, CHAOS_ACCOUNT);
  followers.close();

  // Each task's status record against its terminal event. A final status is written after the terminal
  // event (and before the ack the work queue waited for); one still disagreeing is read again for a
  // while, so only a record that stays wrong counts.
  const { tasks: statusBucket } = await openMeshBuckets(js, { only: ['tasks'], replicas: 3 });
  const statusStore = new TaskStatusStore(statusBucket);
  const statuses = new Map<string, TaskStatusRecord | null>();
  const terminalOf = (traceId: string) =>
    stored.eventsByTrace.get(traceId)?.find((event) => event.type === 'done' || event.type === 'error');
  const readStatuses = async (traceIds: Iterable<string>): Promise<void> => {
    for (const traceId of traceIds) {
      statuses.set(traceId, (await statusStore.get(CHAOS_ACCOUNT, traceId).catch(() => undefined)) ?? null);
    }
  };
  await readStatuses(stored.eventsByTrace.keys());
  const disagreeing = (): string[] =>
    [...statuses].flatMap(([traceId, status]) => {
      const terminal = terminalOf(traceId);
      return terminal !== undefined && statusDisagreement(terminal, status) !== undefined ? [traceId] : [];
    });
  for (let waited = 0; waited < 15_000 && disagreeing().length > 0; waited += 1_000) {
    await sleep(1_000);
    await readStatuses(disagreeing());
  }

  const acceptedAll = new Set([...accepted, ...stored.eventsByTrace.keys()]);
  const expectedAnswers = new Map(tasks.map((task) => [task.traceId, expectedAnswer(task.index)]));
  const verdict = judgeLedger({
    accepted: [...acceptedAll],
    eventsByTrace: stored.eventsByTrace,
    malformedEvents: stored.malformed,
    toolCallsByKey: callsByKey(api),
    workQueueLeftovers: leftovers,
    expectedAnswers,
    statuses,
    followed: followers.followed(
      record.natsFaults.map((fault) => ({ from: fault.at, to: fault.restoredAt })),
    ),
    deadLetters: {
      starts: mesh.slots.flatMap((slot) => slot.attemptStarts()),
      kills: record.kills,
      freezes: record.executorPauses,
      maxDeliver: Number(executorEnv.MAX_DELIVER ?? DEFAULT_MAX_DELIVER),
    },
  });
  const recovery = recoveryTimes({
    eventsByTrace: stored.eventsByTrace,
    submittedAt: new Map(tasks.map((task) => [task.traceId, task.submittedAt])),
    kills: record.kills,
    natsFaults: record.natsFaults,
  });

  const takeover = takeoverTimes({
    eventsByTrace: stored.eventsByTrace,
    kills: record.kills,
    starts: mesh.slots.flatMap((slot) => slot.attemptStarts()),
    natsFaults: record.natsFaults,
  });
  // Judged on the takeovers no NATS node fault slowed down: those are bounded by the cluster's own
  // recovery (leader elections), which the ledger reports apart ("recovery after NATS fault").
  const takeoverP99 = takeover.withoutNatsFault.p99_ms;

  // Leftovers of finished tasks: acknowledged work the server kept (nats-server 2.9 did after a kill).
  const finished = new Set(
    [...stored.eventsByTrace].flatMap(([traceId, events]) =>
      events.some((event) => event.type === 'done' || event.type === 'error') ? [traceId] : [],
    ),
  );
  let leftoversCleaned = 0;
  for (const leftover of leftovers) {
    if (leftover.traceId === undefined || !finished.has(leftover.traceId)) continue;
    if (await jsm.streams.deleteMessage(Streams.TASKS.name, leftover.streamSeq).catch(() => false))
      leftoversCleaned += 1;
  }

  const refusedTasks = tasks.filter((task) => !task.accepted && !acceptedAll.has(task.traceId));
  const count = <T extends string>(items: readonly T[]): Record<string, number> =>
    items.reduce<Record<string, number>>((tally, item) => ({ ...tally, [item]: (tally[item] ?? 0) + 1 }), {});
  const varz = (await fetch(`${mesh.cluster.nodes[0]!.monitorUrl}/varz`)
    .then((r) => r.json())
    .catch(() => ({}))) as {
    version?: string;
  };
  const run: LedgerRun = {
    profile: options.profile,
    seed: options.seed,
    startedAt: new Date(started).toISOString(),
    durationS: (Date.now() - started) / 1000,
    natsServer: varz.version ?? 'unknown',
    refused: refusedTasks.length,
    refusals: refusedTasks.slice(0, 5).map((task) => `${task.traceId}: ${task.refusal ?? '?'}`),
    killsByKind: count(record.kills.map((kill) => kill.kind)),
    natsFaultsByKind: count(record.natsFaults.map((fault) => fault.kind)),
    executorPauses: record.executorPauses.length,
    restartFailures: record.restartFailures,
    runFailures: [
      ...(refusedTasks.length > 0 ? [`${refusedTasks.length} submissions were never accepted`] : []),
      ...record.leftDown.map((name) => `${name} did not come back after its kill`),
      ...(takeoverP99 !== null && takeoverP99 > options.maxTakeoverP99Ms
        ? [
            `p99 of executor kill → task running again (no NATS node down meanwhile) is ${takeoverP99} ms, above ${options.maxTakeoverP99Ms} ms (CHAOS_MAX_TAKEOVER_P99_MS)`,
          ]
        : []),
    ],
    leftoversCleaned,
    redrivenTasks: mesh.slots
      .filter((slot) => slot.name.startsWith('gateway'))
      .flatMap((slot) => slot.logLines())
      .filter((line) => line.msg === 'task message lost by the task queue; published again').length,
    settleS,
  };
  const passed = verdict.passed && run.runFailures.length === 0;
  const table = renderLedger(run, verdict, recovery, takeover);
  console.log(table);
  if (verdict.passed && !passed)
    console.log('(the checks pass, but submissions were refused or restarts failed)');

  const out = fileURLToPath(new URL('../../../.chaos/', import.meta.url));
  mkdirSync(out, { recursive: true });
  const json = `${JSON.stringify(
    {
      passed,
      options,
      run,
      verdict,
      takeover,
      recovery,
      faults: record,
      consumers,
      work_queue_leftovers: leftovers,
      stored_events: stored.total,
    },
    null,
    2,
  )}\n`;
  const file = `${out}ledger-${options.profile}-${new Date(started).toISOString().replaceAll(':', '-')}.json`;
  writeFileSync(file, json);
  writeFileSync(`${out}ledger-${options.profile}-latest.json`, json);
  // Every stored event, for looking into a failed check (a few MB for the full run).
  writeFileSync(
    `${out}events-${options.profile}-latest.json`,
    JSON.stringify({ tasks, events: Object.fromEntries(stored.eventsByTrace) }),
  );
  // Every service's log lines, by slot, for the same purpose.
  writeFileSync(
    `${out}logs-${options.profile}-latest.json`,
    JSON.stringify(Object.fromEntries(mesh.slots.map((slot) => [slot.name, slot.logLines()]))),
  );
  console.log(`\nwritten to ${file}`);
  process.exitCode = passed ? 0 : 1;
} finally {
  await nc.close().catch(() => undefined);
  await followerNc.close().catch(() => undefined);
  await mesh.stop().catch((error: unknown) => say(`stopping the mesh: ${String(error)}`));
  await model.stop();
  await api.stop();
}
// Leftover handles (a reconnecting client, a timer) must not keep a finished run alive.
process.exit(process.exitCode ?? 1);
