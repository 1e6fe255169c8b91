/**
 * The executor service put together: mesh streams and buckets (and the dead-letter stream, with the
 * listener that dead-letters tasks whose last delivery died: dead-letter-listener.ts), the shared task
 * consumers of the native class sets it can serve (before its classes are announced, so routed tasks
 * have a consumer), the cancel listener, the runners a task attempt needs, and its native tools published
 * (mirrored into the registry, announced as provided while it runs). While it runs, the secrets of its
 * running tasks are a process-wide secret filter: every log line the process writes, and every span the
 * executor records, has them removed.
 * `startExecutor` is what `runService` starts, exported so tests can run executors in-process on a NATS
 * connection of their own.
 */
import {
  AccountUsageStore,
  DeadLetterStore,
  ensureDeadLetterStream,
  ensureTaskAdvisoryStream,
  ensureThreadStream,
  ThreadStore,
  ensureMeshStreams,
  openMeshBuckets,
  ParkedTaskStore,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  addSecretFilter,
  logWaitingForResource,
  type RunningService,
  type ServiceContext,
} from '@agentmesh/runtime';
import { executorConsumer } from '@agentmesh/protocol';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { AccountUsageBatcher } from './budget/account-usage-batcher.js';
import { ApprovalTimeouts } from './approval/approval-timeouts.js';
import { AttemptOwners } from './attempt-owners.js';
import { HeartbeatClock } from './heartbeat-clock.js';
import { CancelListener } from './cancel-listener.js';
import { DeadLetterListener, DeadLetterRecorder } from './dead-letter-listener.js';
import type { ExecutorConfig } from './config.js';
import { ExecutorMetrics } from './executor-metrics.js';
import { createToolRunners, logScriptSandbox, publishNativeTools } from './tools/executor-tools.js';
import { SubAgentToolRunner } from './tools/sub-agent/index.js';
import { ModelEndpointGuard, createModelAdapter } from './llm/index.js';
import { endingMalformedTasks } from './malformed-task-ending.js';
import { RunningTasks } from './running-tasks.js';
import { OpenSecrets } from './secrets/index.js';
import { ensureExecutorConsumer, servableClassSets, TaskConsumer } from './task-consumer.js';
import { TaskRunner } from './task-runner.js';
import { SharedKeyLimits } from './model-choice/shared-key-limits.js';

/** Share of SHUTDOWN_TIMEOUT_MS running tasks get to finish; the rest covers handing back and draining. */
const STOP_GRACE_SHARE = 0.6;

export async function startExecutor({
  config,
  log: serviceLog,
  nc,
}: ServiceContext<ExecutorConfig>): Promise<RunningService> {
  const executorId = config.EXECUTOR_ID ?? `executor-${process.pid}`;
  const log = serviceLog.child({ executor_id: executorId });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const wait = { onWaiting: logWaitingForResource(log) };
  await ensureMeshStreams(
    jsm,
    { replicas: config.NATS_REPLICAS, taskRetentionMs: config.TASK_RETENTION_MS },
    wait,
  );
  await ensureDeadLetterStream(
    jsm,
    { replicas: config.NATS_REPLICAS, deadLetterRetentionMs: config.DEAD_LETTER_RETENTION_MS },
    wait,
  );
  await ensureTaskAdvisoryStream(jsm, { replicas: config.NATS_REPLICAS }, wait);
  const buckets = await openMeshBuckets(
    js,
    {
      replicas: config.NATS_REPLICAS,
      taskRetentionMs: config.TASK_RETENTION_MS,
      only: ['tasks', 'accountUsage', 'parkedTasks', 'threads', 'modelLimits'],
    },
    wait,
  );
  await ensureThreadStream(jsm, { replicas: config.NATS_REPLICAS }, wait);

  const tools = createToolRunners(config, nc);
  if (tools.runners.scripts !== undefined) await logScriptSandbox(tools.runners.scripts.runner, log);
  const classSets = servableClassSets(tools.runners.native.classNames());
  for (const classes of classSets) {
    await ensureExecutorConsumer(
      jsm,
      {
        maxDeliver: config.MAX_DELIVER,
        ...(config.MAX_DELIVERIES === undefined ? {} : { maxDeliveries: config.MAX_DELIVERIES }),
        ackWaitMs: config.ACK_WAIT_MS,
        maxAckPending: config.CONSUMER_MAX_ACK_PENDING,
      },
      classes,
    );
  }
  // One guard (and connection pool) for every task's model endpoint: checked like tool targets, own allow-list.
  const modelEndpoints = new ModelEndpointGuard({ allowHosts: config.MODEL_ALLOW_HOSTS });
  const nativeTools = await publishNativeTools(js, tools.runners.native, {
    executorId,
    ttlMs: config.NATIVE_PROVIDER_TTL_MS,
    replicas: config.NATS_REPLICAS,
    wait,
    log,
  });

  const openSecrets = new OpenSecrets();
  const removeSecretFilter = addSecretFilter((text) => openSecrets.scrub(text));
  const running = new RunningTasks();
  const statuses = new TaskStatusStore(buckets.tasks);
  const cancels = await CancelListener.start({ nc, statuses, running, log });
  const owners = await AttemptOwners.start({ nc, running, timeoutMs: config.ACK_PROGRESS_MS, log });
  // A gap of ack_wait less one heartbeat period: by then nats-server may have handed the tasks on.
  const clock = new HeartbeatClock(config.ACK_WAIT_MS - config.ACK_PROGRESS_MS);
  const metrics = new ExecutorMetrics();
  const deadLetters = new DeadLetterRecorder(new DeadLetterStore(js, jsm), log);
  const threads = new ThreadStore(js, jsm, buckets.threads);
  const parkedTasks = new ParkedTaskStore(buckets.parkedTasks);
  const accountUsage = new AccountUsageBatcher({
    store: new AccountUsageStore(buckets.accountUsage),
    flushMs: config.ACCOUNT_USAGE_FLUSH_MS,
    onError: (error, batch) =>
      log.error(
        { err: error, account_id: batch.accountId },
        "could not add usage to the account's day; kept for the next try",
      ),
  });
  const deadLetterListener = DeadLetterListener.start({
    threads,
    js,
    jsm,
    statuses,
    recorder: deadLetters,
    log,
    owners,
    accountUsage,
  });
  const approvalTimeouts = await ApprovalTimeouts.start({
    store: parkedTasks,
    js,
    log,
    requeueGraceMs: config.APPROVAL_REQUEUE_GRACE_MS,
  });
  const runner = new TaskRunner({
    js,
    jsm,
    statuses,
    threads,
    metrics,
    keyring: config.VAULT_PRIVATE_KEYS,
    running,
    tools: {
      ...tools.runners,
      subAgents: new SubAgentToolRunner({
        nc,
        jsm,
        statuses,
        parked: { store: parkedTasks, js },
        maxDepth: config.MAX_SUBTASK_DEPTH,
        submitTimeoutMs: config.SUBTASK_SUBMIT_TIMEOUT_MS,
      }),
    },
    maxSubtasksPerTask: config.MAX_SUBTASKS_PER_TASK,
    createModel: (options) =>
      createModelAdapter({ ...options, maxRetries: config.LLM_MAX_RETRIES, endpointGuard: modelEndpoints }),
    maxDeliver: config.MAX_DELIVER,
    ...(config.MAX_DELIVERIES === undefined ? {} : { maxDeliveries: config.MAX_DELIVERIES }),
    deadLetters,
    deltaCoalescing: {
      windowMs: config.EVENT_DELTA_WINDOW_MS,
      busyWindowMs: config.EVENT_DELTA_BUSY_WINDOW_MS,
      busyTasks: config.EVENT_DELTA_BUSY_TASKS,
      minChars: config.EVENT_DELTA_MIN_CHARS,
      maxChars: config.EVENT_DELTA_MAX_CHARS,
      load: () => running.size,
    },
    toolArgsStreamMinChars: config.TOOL_ARGS_STREAM_MIN_CHARS,
    llmTimeoutMs: config.LLM_TIMEOUT_MS,
    firstByteTimeoutMs: config.LLM_FIRST_BYTE_TIMEOUT_MS,
    idleTimeoutMs: config.LLM_IDLE_TIMEOUT_MS,
    keyLimits: new SharedKeyLimits(buckets.modelLimits, {
      leaseMs: config.MODEL_LIMIT_LEASE_MS,
      holder: executorId,
    }),
    prices: config.MODEL_PRICES,
    accountUsage,
    log,
    openSecrets,
    parkedTasks,
    approvals: { defaultTimeoutMs: config.APPROVAL_TIMEOUT_MS, eventRetentionMs: config.TASK_RETENTION_MS },
    owners,
    clock,
  });
  const consumer = TaskConsumer.start(
    js,
    (task, delivery) => runner.run(task, delivery),
    {
      durableNames: classSets.map((classes) => executorConsumer(classes).durable_name),
      maxConcurrent: config.MAX_CONCURRENT_TASKS,
      maxWaiting: config.MAX_WAITING_TASKS,
      ackProgressMs: config.ACK_PROGRESS_MS,
      pullExpiresMs: config.PULL_EXPIRES_MS,
      stopGraceMs: Math.floor(config.SHUTDOWN_TIMEOUT_MS * STOP_GRACE_SHARE),
      handBackAll: () => running.handBackAll(),
      onMalformed: endingMalformedTasks({ js, jsm, statuses, metrics, log }),
      handBackLaterMs: config.VAULT_KEY_HAND_BACK_MS,
      clock,
    },
    log,
  );
  log.info(
    { max_concurrent_tasks: config.MAX_CONCURRENT_TASKS, executor_instance: owners.instance },
    'executor consuming tasks',
  );

  return {
    async stop() {
      await consumer.stop();
      // After the consumer: tasks finishing during the grace period can still be cancelled, and are
      // still known to run here when a redelivery asks.
      await cancels.stop();
      await owners.stop();
      await deadLetterListener.stop();
      approvalTimeouts.stop();
      // After the consumer: the usage of the last tasks is written before NATS closes.
      await accountUsage.stop();
      await nativeTools
        .stop()
        .catch((error: unknown) =>
          log.warn(
            { err: error },
            'withdrawing the native tool announcements failed; they expire on their own',
          ),
        );
      await tools.close();
      await modelEndpoints.close();
      removeSecretFilter();
    },
  };
}
