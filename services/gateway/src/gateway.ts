/**
 * Starting the gateway from its configuration on a NATS connection: the mesh's streams and buckets,
 * registry entries of before tenancy carried into the shared catalogue, the stores, the live feed of task
 * events, the HTTP server, the NATS ingress and the metrics. Used by the service entry point and, in-process, by the tests.
 */
import { hkdfSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  accountScope,
  AccountUsageStore,
  AgentStore,
  McpServerStore,
  ApiKeyStore,
  CredentialStore,
  DeadLetterStore,
  ensureDeadLetterStream,
  ensureThreadStream,
  startThreadPromoter,
  ThreadStore,
  ensureMeshStreams,
  ensureWebhookStream,
  CorruptRecordError,
  IdempotencyStore,
  startLiveAgents,
  copyLegacyToolBucket,
  hasStoredTaskEvents,
  migrateLegacyRegistryEntries,
  migrateUnversionedAgents,
  openMeshBuckets,
  ToolStore,
  TaskStatusStore,
  ParkedTaskStore,
  ScheduleStore,
} from '@agentmesh/bus';
import { Streams } from '@agentmesh/protocol';
import { logWaitingForResource, type Logger } from '@agentmesh/runtime';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { millis, type NatsConnection } from '@nats-io/transport-node';
import type { FastifyInstance } from 'fastify';
import { buildGatewayApp } from './app.js';
import { Authenticator } from './auth.js';
import type { GatewayConfig } from './config.js';
import { GatewayMetrics } from './gateway-metrics.js';
import { LiveEventFeed } from './live-event-feed.js';
import { isStillQueued, LOST_TASK_MAX_REDRIVES, redriveTask } from './lost-task-redrive.js';
import { LostTaskWatch } from './lost-task-watch.js';
import { startNatsIngress } from './nats-ingress.js';
import { startThreadNatsApi, ThreadApi } from './thread-api.js';
import { RecallForwarder } from './recall-forwarding.js';
import { StreamTokens, streamTokenKey } from './stream-tokens.js';
import { ApprovalDesk } from './task-approvals.js';
import { TaskCanceller } from './task-cancellation.js';
import { pinnedVersionCheck } from './pinned-version-check.js';
import { TaskSubmitter } from './task-submission.js';
import { RunningTaskLimiter } from './running-task-limits.js';
import { SubmissionRateLimiter } from './submission-rate-limits.js';
import { TaskQueueDepth } from './task-queue-depth.js';
import { AccountDailyCaps } from './account-daily-caps.js';
import { systemClock, type SchedulerClock } from './schedules/clock.js';
import { Scheduler } from './schedules/scheduler.js';
import { startWebhooks } from './webhooks/index.js';

export interface GatewayContext {
  config: Readonly<GatewayConfig>;
  log: Logger;
  nc: NatsConnection;
  /** The schedules' clock; tests give one they can freeze and move. Default: the system's. */
  clock?: SchedulerClock;
}

export interface RunningGateway {
  /** Where the HTTP server listens, e.g. `http://127.0.0.1:8080`. */
  url: string;
  app: FastifyInstance;
  /** The live feed of task events serving SSE streams; undefined when SSE_LIVE_FEED is off. */
  liveEvents: LiveEventFeed | undefined;
  /** Counts of tasks running at once; undefined when neither MAX_RUNNING_TASKS_* limit is set. */
  runningTasks: RunningTaskLimiter | undefined;
  /** The schedule firing loop (runs only with SCHEDULER_ENABLED; run-now works either way). */
  scheduler: Scheduler;
  stop(): Promise<void>;
}

/**
 * The HMAC key of idempotency request digests, derived from the credentials master key so every gateway
 * has the same one without another secret to configure (and a digest reveals nothing without it).
 */
function requestDigestKey(masterKey: string): Uint8Array {
  return new Uint8Array(
    hkdfSync(
      'sha256',
      Buffer.from(masterKey, 'base64'),
      Buffer.alloc(0),
      'agentmesh/idempotency-digest/v1',
      32,
    ),
  );
}

export async function startGateway({
  config,
  log,
  nc,
  clock = systemClock,
}: GatewayContext): Promise<RunningGateway> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
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
  await ensureThreadStream(jsm, { replicas: config.NATS_REPLICAS }, wait);
  await ensureWebhookStream(jsm, { replicas: config.NATS_REPLICAS }, wait);
  // The buckets it uses, no more: its NATS user may read no other (infra/nats/accounts.conf).
  const buckets = await openMeshBuckets(
    js,
    {
      replicas: config.NATS_REPLICAS,
      taskRetentionMs: config.TASK_RETENTION_MS,
      only: [
        'agents',
        'tools',
        'credentials',
        'tasks',
        'idempotency',
        'apiKeys',
        'mcpServers',
        'parkedTasks',
        'accountUsage',
        'schedules',
        'scheduleFirings',
        'threads',
        'webhooks',
        'webhookDeadLetters',
      ],
      deadLetterRetentionMs: config.DEAD_LETTER_RETENTION_MS,
    },
    wait,
  );
  // The stream as it exists, which another service or an operator may have created.
  const tasksStream = await jsm.streams.info(Streams.TASKS.name);
  const legacyTools = await copyLegacyToolBucket(js, buckets.tools);
  if (legacyTools.copied.length > 0 || legacyTools.kept.length > 0) {
    log.info(
      { copied: legacyTools.copied.length, kept: legacyTools.kept.length },
      'tools of the old mesh_plugins bucket copied into mesh_tools (the old bucket can be dropped)',
    );
  }
  for (const [what, kv, idField] of [
    ['agents', buckets.agents, 'workflow_id'],
    ['tools', buckets.tools, 'name'],
  ] as const) {
    const report = await migrateLegacyRegistryEntries(kv, idField);
    if (report.moved.length > 0 || report.superseded.length > 0) {
      log.info(
        { registry: what, moved: report.moved, superseded: report.superseded },
        'registry entries of before tenancy moved to the shared catalogue',
      );
    }
  }

  const versioned = await migrateUnversionedAgents(buckets.agents);
  if (versioned.length > 0) {
    log.info({ agents: versioned }, 'agents stored before versions existed kept as their version 1');
  }

  const statuses = new TaskStatusStore(buckets.tasks);
  const threads = new ThreadStore(js, jsm, buckets.threads);
  const parked = new ParkedTaskStore(buckets.parkedTasks);
  const canceller = new TaskCanceller({ nc, js, statuses, parked, log });
  const runningLimiter =
    config.MAX_RUNNING_TASKS_PER_ACCOUNT > 0 || config.MAX_RUNNING_TASKS_PER_API_KEY > 0
      ? new RunningTaskLimiter({
          limits: {
            perAccount: config.MAX_RUNNING_TASKS_PER_ACCOUNT,
            perApiKey: config.MAX_RUNNING_TASKS_PER_API_KEY,
          },
          status: (accountId, traceId) => statuses.get(accountId, traceId),
          recheckMs: config.RUNNING_TASKS_RECHECK_MS,
          maxAgeMs: config.TASK_RETENTION_MS,
          onRecheckError: (error) =>
            log.warn({ err: error }, 'running task slots could not be checked; trying again later'),
        })
      : undefined;

  const queueDepth = new TaskQueueDepth({
    consumers: jsm.consumers,
    maxAgeMs: config.QUEUE_DEPTH_MAX_AGE_MS,
    log,
  });
  const lostTasks = new LostTaskWatch({
    afterMs: config.LOST_TASK_REDRIVE_AFTER_MS,
    everyMs: config.LOST_TASK_CHECK_MS,
    maxBytes: config.LOST_TASK_MAX_BYTES,
    maxRedrives: LOST_TASK_MAX_REDRIVES,
    status: (accountId, traceId) => statuses.get(accountId, traceId),
    hasEvents: (accountId, traceId) => hasStoredTaskEvents(jsm, accountId, traceId),
    stillQueued: (seq) => isStillQueued(jsm, seq),
    waiting: async () => {
      const depths = await queueDepth.read();
      // A stage that could not be read may hold the task: not "nothing waiting".
      return depths.length < 2
        ? Number.POSITIVE_INFINITY
        : depths.reduce((sum, depth) => sum + depth.pending, 0);
    },
    redrive: (task, n) => redriveTask(js, task, n),
    onRedriven: (task, n) =>
      log.warn(
        { account_id: task.accountId, trace_id: task.traceId, redrive: n },
        'task message lost by the task queue; published again',
      ),
    onGaveUp: (task) =>
      log.error(
        { account_id: task.accountId, trace_id: task.traceId, redrives: LOST_TASK_MAX_REDRIVES },
        'task message lost again after every re-drive; no longer watched',
      ),
    onCheckError: (error) => log.warn({ err: error }, 'lost-task check failed; trying again next round'),
  });
  const onTerminal = (accountId: string, traceId: string): void => {
    runningLimiter?.ended(accountId, traceId);
    lostTasks.ended(accountId, traceId);
  };

  const liveEvents = config.SSE_LIVE_FEED
    ? await LiveEventFeed.start({
        js,
        jsm,
        limits: {
          maxTasks: config.SSE_BUFFER_MAX_TASKS,
          maxBytes: config.SSE_BUFFER_MAX_BYTES,
          taskMaxBytes: config.SSE_BUFFER_TASK_MAX_BYTES,
          finishedTtlMs: config.SSE_BUFFER_FINISHED_TTL_MS,
        },
        log,
        onTerminal,
      }).catch((error: unknown) => {
        // runService tries start-up again after a NATS outage: leave no recheck timer behind.
        runningLimiter?.stop();
        lostTasks.stop();
        throw error;
      })
    : undefined;

  // Created here, after runService registered the meter provider (the metrics API has no proxy).
  const metrics = new GatewayMetrics();
  const unobserveQueueDepth = metrics.observeQueueDepth(() => queueDepth.read());

  const apiKeys = new ApiKeyStore(buckets.apiKeys);
  const authenticator = new Authenticator({
    ...(config.API_KEYS ? { configuredKeys: config.API_KEYS } : {}),
    ...(config.ADMIN_API_KEYS ? { adminKeys: config.ADMIN_API_KEYS } : {}),
    apiKeyStore: apiKeys,
  });
  const dailyCaps = new AccountDailyCaps({
    defaults: { tokens: config.ACCOUNT_DAILY_TOKEN_CAP, cost_usd: config.ACCOUNT_DAILY_COST_CAP_USD },
    perAccount: config.ACCOUNT_DAILY_CAPS ?? new Map(),
    usage: new AccountUsageStore(buckets.accountUsage),
    cacheMs: config.ACCOUNT_USAGE_CACHE_MS,
  });
  // Submissions naming no agent are refused up front; a live mirror answers without a KV read.
  const liveAgents = await startLiveAgents(buckets.agents, {
    maxEntries: config.AGENT_CACHE_MAX_ENTRIES,
    connection: nc,
    onEvent: (event) => {
      if (event.type === 'stale' && event.reason === 'watch_failed') {
        log.warn({ err: event.error }, 'agent mirror watch failed; reading KV until it is back');
      }
    },
  });
  const agents = new AgentStore(buckets.agents);
  const agentExists = async (accountId: string, workflowId: string): Promise<boolean> => {
    try {
      return (await liveAgents.resolve(accountScope(accountId), workflowId)) !== undefined;
    } catch (error) {
      // A stored agent that does not parse still exists: the assembler fails the task naming it.
      if (error instanceof CorruptRecordError) return true;
      throw error;
    }
  };
  const credentialKeys = {
    current: { kid: config.CREDENTIALS_MASTER_KEY_ID, key: config.CREDENTIALS_MASTER_KEY },
    ...(config.CREDENTIALS_PREVIOUS_KEYS ? { previous: config.CREDENTIALS_PREVIOUS_KEYS } : {}),
  };
  const webhooks = await startWebhooks({
    js,
    jsm,
    buckets,
    keys: credentialKeys,
    config,
    log,
    connection: nc,
  });
  const submitter = new TaskSubmitter({
    js,
    statuses,
    idempotency: new IdempotencyStore(buckets.idempotency, requestDigestKey(config.CREDENTIALS_MASTER_KEY)),
    vaultRecipient: { kid: config.VAULT_KEY_ID, publicKey: config.VAULT_PUBLIC_KEY },
    republishWindowMs: millis(tasksStream.config.duplicate_window ?? 0),
    rateLimiter: new SubmissionRateLimiter({
      perAccount: config.SUBMIT_RATE_PER_ACCOUNT,
      perApiKey: config.SUBMIT_RATE_PER_API_KEY,
    }),
    ...(runningLimiter ? { runningLimiter } : {}),
    lostTasks,
    ...(dailyCaps.active ? { dailyCaps } : {}),
    agentExists,
    threads,
    cancelRun: (accountId, traceId, reason) => canceller.cancel(traceId, accountId, reason),
    ...(config.PUBLIC_BASE_URL ? { publicBaseUrl: config.PUBLIC_BASE_URL } : {}),
    pinnedVersions: pinnedVersionCheck(agents),
    taskWebhooks: webhooks.taskWebhooks,
    metrics,
    log,
  });
  const schedules = new ScheduleStore(buckets.schedules, buckets.scheduleFirings);
  const scheduler = new Scheduler({
    store: schedules,
    submitter,
    clock,
    tickMs: config.SCHEDULE_TICK_MS,
    graceMs: config.SCHEDULE_MISFIRE_GRACE_MS,
    claimLeaseMs: config.SCHEDULE_CLAIM_LEASE_MS,
    log,
  });
  const deploymentRetention = {
    ...(config.THREAD_DEFAULT_MAX_AGE_SECONDS > 0
      ? { max_age_seconds: config.THREAD_DEFAULT_MAX_AGE_SECONDS }
      : {}),
    ...(config.THREAD_DEFAULT_MAX_TURNS > 0 ? { max_turns: config.THREAD_DEFAULT_MAX_TURNS } : {}),
  };
  const threadApi = new ThreadApi(
    threads,
    statuses,
    log,
    (accountId) => config.THREAD_RETENTION_BY_ACCOUNT?.get(accountId) ?? deploymentRetention,
  );
  const app = buildGatewayApp({
    log,
    nc,
    js,
    jsm,
    stores: {
      agents,
      plugins: new ToolStore(buckets.tools),
      mcpServers: new McpServerStore(buckets.mcpServers),
      credentials: new CredentialStore(buckets.credentials, credentialKeys),
      statuses,
      apiKeys,
      deadLetters: new DeadLetterStore(js, jsm),
    },
    authenticator,
    submitter,
    canceller,
    threads: { store: threads, api: threadApi },
    webhooks: webhooks.routes,
    approvals: new ApprovalDesk({ js, statuses, parked, log }),
    liveEvents,
    recall: new RecallForwarder({ nc, timeoutMs: config.RECALL_TIMEOUT_MS, log }),
    metrics,
    streamTokens: new StreamTokens(streamTokenKey(config.CREDENTIALS_MASTER_KEY), config.STREAM_TOKEN_TTL_MS),
    schedules: {
      store: schedules,
      scheduler,
      clock,
      agentExists,
      pinnedVersions: pinnedVersionCheck(agents),
      threads,
      ...(config.PUBLIC_BASE_URL ? { publicBaseUrl: config.PUBLIC_BASE_URL } : {}),
    },
    settings: {
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      pluginImportBodyLimitBytes: config.PLUGIN_IMPORT_BODY_LIMIT_BYTES,
      agentVersionsKept: config.AGENT_VERSIONS_KEPT,
      sseHeartbeatMs: config.SSE_HEARTBEAT_MS,
      sseMaxStreams: config.SSE_MAX_STREAMS,
      sseMaxStreamsPerCaller: config.SSE_MAX_STREAMS_PER_CALLER,
      trustAccountHeaders: config.TRUST_ACCOUNT_HEADERS,
      corsAllowedOrigins: config.CORS_ALLOWED_ORIGINS ?? new Set(),
      consoleEnabled: config.CONSOLE_ENABLED,
      a2a: {
        cancelWaitMs: config.A2A_CANCEL_WAIT_MS,
        ...(config.PUBLIC_BASE_URL ? { publicBaseUrl: config.PUBLIC_BASE_URL } : {}),
      },
      mcpSessions: {
        maxSessions: config.MCP_MAX_SESSIONS,
        maxSessionsPerCaller: config.MCP_MAX_SESSIONS_PER_CALLER,
        idleMs: config.MCP_SESSION_IDLE_MS,
      },
    },
  });

  try {
    await app.listen({ host: config.HTTP_HOST, port: config.HTTP_PORT });
  } catch (error) {
    // runService tries start-up again: leave no watch or consumer behind.
    liveAgents.stop();
    await webhooks.stop();
    throw error;
  }
  const { port } = app.server.address() as AddressInfo;
  const host = config.HTTP_HOST.includes(':') ? `[${config.HTTP_HOST}]` : config.HTTP_HOST;
  const url = `http://${host}:${port}`;
  const ingress = startNatsIngress({
    nc,
    submitter,
    authenticator,
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    log,
  });
  if (config.SCHEDULER_ENABLED) scheduler.start();
  const threadIngress = startThreadNatsApi({
    nc,
    api: threadApi,
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    log,
  });
  // Queued thread runs an executor promoted (or a gateway left unpublished) are published from here.
  const threadPromoter = startThreadPromoter(buckets.threads, threads, {
    onPublished: (accountId, threadId, traceId) =>
      log.info(
        { account_id: accountId, thread_id: threadId, trace_id: traceId },
        'queued thread run published',
      ),
    onError: (error) =>
      log.warn({ err: error }, 'a queued thread run could not be published; the next write retries'),
  });
  log.info(
    {
      url,
      trust_account_headers: config.TRUST_ACCOUNT_HEADERS,
      configured_api_keys: config.API_KEYS?.size ?? 0,
    },
    'http listening',
  );

  return {
    url,
    app,
    liveEvents,
    runningTasks: runningLimiter,
    scheduler,
    async stop() {
      unobserveQueueDepth();
      await scheduler.stop();
      runningLimiter?.stop();
      lostTasks.stop();
      await ingress.stop();
      await threadIngress.stop();
      threadPromoter.stop();
      // Open streams end first (the app's close aborts them), then the feed's consumer goes.
      await app.close();
      await liveEvents?.stop();
      liveAgents.stop();
      await webhooks.stop();
    },
  };
}
