/**
 * The gateway's HTTP application, built from its dependencies so tests can run it in-process: the
 * inference plane (tasks, SSE events), seed 004's recall endpoints, the management plane, probes, what
 * browsers need (CORS, stream tokens, task and agent lists, the web console at /console), and
 * one error body for every rejection, down to what Node's HTTP parser refuses. JSON bodies are read
 * with a depth limit. Requests are logged and metered as method, route pattern, status and duration —
 * never bodies, headers or the URL with its ids.
 */
import type {
  AgentStore,
  ApiKeyStore,
  CredentialStore,
  DeadLetterStore,
  McpServerStore,
  ToolStore,
  TaskStatusStore,
  ThreadStore,
} from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Authenticator } from './auth.js';
import { EventStreamSlots } from './event-stream-slots.js';
import type { GatewayMetrics } from './gateway-metrics.js';
import { errorReplyOptions, installErrorReplies } from './http-error-replies.js';
import { installJsonBodyParser } from './json-body.js';
import type { LiveEventFeed } from './live-event-feed.js';
import type { RecallForwarder } from './recall-forwarding.js';
import { installCors } from './cors.js';
import { registerA2aRoutes } from './a2a/index.js';
import { registerBrowserAccessRoutes } from './routes/browser-access.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerManagementRoutes } from './routes/management.js';
import { registerOpenAiRoutes } from './routes/openai-compatible.js';
import { registerMcpRoutes } from './routes/mcp.js';
import { registerResponsesRoutes } from './openai-responses/index.js';
import { registerRecallRoutes } from './routes/recall.js';
import { requestAuthenticator } from './routes/request-caller.js';
import { registerTaskEventRoutes } from './routes/task-events-sse.js';
import { registerTaskApprovalRoutes } from './routes/task-approvals.js';
import { registerTaskRoutes } from './routes/tasks.js';
import { registerThreadRoutes } from './routes/threads.js';
import type { ThreadApi } from './thread-api.js';
import type { StreamTokens } from './stream-tokens.js';
import type { WebhookRouteDeps } from './webhooks/index.js';
import type { ApprovalDesk } from './task-approvals.js';
import type { TaskCanceller } from './task-cancellation.js';
import type { TaskSubmitter } from './task-submission.js';
import { registerScheduleRoutes, type ScheduleRouteDeps } from './schedules/schedule-routes.js';
import { registerAgUiRoutes } from './ag-ui/ag-ui-routes.js';

const DEFAULT_A2A_CANCEL_WAIT_MS = 5_000;

export interface GatewayStores {
  agents: AgentStore;
  plugins: ToolStore;
  mcpServers: McpServerStore;
  credentials: CredentialStore;
  statuses: TaskStatusStore;
  apiKeys: ApiKeyStore;
  deadLetters: DeadLetterStore;
}

export interface GatewayAppSettings {
  bodyLimitBytes: number;
  /** Body limit of `POST /v1/admin/plugins/import` (OpenAPI documents). */
  pluginImportBodyLimitBytes: number;
  /** Versions of each agent kept (AGENT_VERSIONS_KEPT); default the store's. */
  agentVersionsKept?: number;
  sseHeartbeatMs: number;
  /** Event streams this instance keeps open at once (SSE_MAX_STREAMS). */
  sseMaxStreams: number;
  /** Event streams one caller keeps open at once (SSE_MAX_STREAMS_PER_CALLER). */
  sseMaxStreamsPerCaller: number;
  /** HTTP callers without an API key are trusted internal callers (TRUST_ACCOUNT_HEADERS). */
  trustAccountHeaders: boolean;
  /** Origins allowed to call cross-origin (CORS_ALLOWED_ORIGINS); empty: no CORS. */
  corsAllowedOrigins: ReadonlySet<string>;
  /** Serve the web console at /console (CONSOLE_ENABLED). */
  consoleEnabled: boolean;
  /** MCP sessions (`/mcp`): MCP_MAX_SESSIONS, MCP_MAX_SESSIONS_PER_CALLER, MCP_SESSION_IDLE_MS. */
  mcpSessions: { maxSessions: number; maxSessionsPerCaller: number; idleMs: number };
  /** The A2A door: A2A_CANCEL_WAIT_MS, and PUBLIC_BASE_URL for the cards' endpoint URLs. */
  a2a?: { cancelWaitMs: number; publicBaseUrl?: string };
}

export interface GatewayAppDeps {
  log: Logger;
  /** Webhook endpoints and dead letters (management routes). */
  webhooks: WebhookRouteDeps;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  stores: GatewayStores;
  authenticator: Authenticator;
  submitter: TaskSubmitter;
  canceller: TaskCanceller;
  /** Decisions on the tool calls of parked tasks. */
  approvals: ApprovalDesk;
  /** Fans stored task events out to SSE streams; undefined when SSE_LIVE_FEED is off. */
  liveEvents: LiveEventFeed | undefined;
  /** Seed 004's recall endpoints ask the recall service through it. */
  recall: RecallForwarder;
  metrics: GatewayMetrics;
  /** Issues and checks stream tokens (`?token=` on a task's event stream). */
  streamTokens: StreamTokens;
  /** `/v1/schedules`: the store, the firing loop (run-now), its clock and the agent check. */
  schedules: Omit<ScheduleRouteDeps, 'authenticate' | 'statuses'>;
  /** Threads (`/v1/threads...`); undefined: not served. */
  threads?: { store: ThreadStore; api: ThreadApi };
  settings: GatewayAppSettings;
}

export function buildGatewayApp(deps: GatewayAppDeps): FastifyInstance {
  const { log, stores, settings } = deps;
  const app = Fastify({ bodyLimit: settings.bodyLimitBytes, logger: false, ...errorReplyOptions(log) });
  // Open event streams would keep the server from closing: end them first.
  const shutdown = new AbortController();
  app.addHook('preClose', async () => shutdown.abort());
  installErrorReplies(app, log, { bodyLimitBytes: settings.bodyLimitBytes, closing: shutdown.signal });
  installJsonBodyParser(app);
  installCors(app, settings.corsAllowedOrigins);

  // A person reading the log wants what went wrong: answered requests at debug, refusals at info,
  // the gateway's own failures at warn.
  app.addHook('onResponse', async (request, reply) => {
    const level = reply.statusCode >= 500 ? 'warn' : reply.statusCode >= 300 ? 'info' : 'debug';
    log[level](
      {
        method: request.method,
        route: request.routeOptions.url ?? '(none)',
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime),
      },
      'http request',
    );
  });
  // Metered when the response closes rather than in onResponse: an event stream takes the reply over
  // (hijack), and Fastify's hooks never see it end.
  app.addHook('onRequest', async (request, reply) => {
    reply.raw.once('close', () => {
      // The client went away before anything was answered: no status to report.
      if (!reply.raw.headersSent) return;
      deps.metrics.httpRequest({
        method: request.method,
        route: request.routeOptions.url,
        statusCode: reply.raw.statusCode,
        seconds: reply.elapsedTime / 1000,
      });
    });
  });

  const slots = new EventStreamSlots({
    maxStreams: settings.sseMaxStreams,
    maxStreamsPerCaller: settings.sseMaxStreamsPerCaller,
  });
  const unobserveStreams = deps.metrics.observeEventStreams(() => slots.open);
  app.addHook('onClose', async () => unobserveStreams());

  const authenticate = requestAuthenticator(deps.authenticator, settings.trustAccountHeaders);
  registerHealthRoutes(app, { nc: deps.nc, jsm: deps.jsm });
  registerTaskRoutes(app, {
    authenticate,
    submitter: deps.submitter,
    canceller: deps.canceller,
    statuses: stores.statuses,
    jsm: deps.jsm,
    streamTokens: deps.streamTokens,
  });
  registerTaskApprovalRoutes(app, { authenticate, approvals: deps.approvals });
  registerTaskEventRoutes(app, {
    authenticate,
    statuses: stores.statuses,
    js: deps.js,
    jsm: deps.jsm,
    liveEvents: deps.liveEvents,
    heartbeatMs: settings.sseHeartbeatMs,
    slots,
    streamTokens: deps.streamTokens,
    shutdown: shutdown.signal,
    log,
  });
  if (deps.threads !== undefined) {
    registerThreadRoutes(app, {
      authenticate,
      api: deps.threads.api,
      threads: deps.threads.store,
      js: deps.js,
      heartbeatMs: settings.sseHeartbeatMs,
      slots,
      shutdown: shutdown.signal,
      log,
    });
  }
  registerManagementRoutes(app, {
    authenticate,
    agents: stores.agents,
    plugins: stores.plugins,
    mcpServers: stores.mcpServers,
    credentials: stores.credentials,
    apiKeys: stores.apiKeys,
    configuredAccounts: deps.authenticator.configuredAccounts(),
    deadLetters: stores.deadLetters,
    webhooks: deps.webhooks,
    submitter: deps.submitter,
    pluginImportBodyLimitBytes: settings.pluginImportBodyLimitBytes,
    ...(settings.agentVersionsKept !== undefined && { agentVersionsKept: settings.agentVersionsKept }),
    log,
  });
  registerScheduleRoutes(app, { ...deps.schedules, authenticate, statuses: stores.statuses });
  registerRecallRoutes(app, { authenticate, forwarder: deps.recall });
  registerOpenAiRoutes(app, {
    authenticate,
    submitter: deps.submitter,
    canceller: deps.canceller,
    agents: stores.agents,
    statuses: stores.statuses,
    js: deps.js,
    liveEvents: deps.liveEvents,
    slots,
    heartbeatMs: settings.sseHeartbeatMs,
    shutdown: shutdown.signal,
    log,
  });
  if (deps.threads !== undefined) {
    // Every response runs in a thread (so it can be continued): the door needs the thread API.
    registerResponsesRoutes(app, {
      authenticate,
      submitter: deps.submitter,
      canceller: deps.canceller,
      agents: stores.agents,
      statuses: stores.statuses,
      threads: deps.threads.api,
      js: deps.js,
      jsm: deps.jsm,
      liveEvents: deps.liveEvents,
      slots,
      heartbeatMs: settings.sseHeartbeatMs,
      shutdown: shutdown.signal,
      log,
    });
  }
  registerAgUiRoutes(app, {
    authenticate,
    submitter: deps.submitter,
    approvals: deps.approvals,
    statuses: stores.statuses,
    js: deps.js,
    liveEvents: deps.liveEvents,
    slots,
    heartbeatMs: settings.sseHeartbeatMs,
    ...(deps.threads === undefined ? {} : { threads: deps.threads }),
    shutdown: shutdown.signal,
    log,
  });
  registerMcpRoutes(app, {
    authenticate,
    agents: stores.agents,
    submitter: deps.submitter,
    canceller: deps.canceller,
    statuses: stores.statuses,
    js: deps.js,
    liveEvents: deps.liveEvents,
    slots,
    stopping: shutdown.signal,
    sessions: settings.mcpSessions,
    allowedOrigins: settings.corsAllowedOrigins,
    log,
  });
  if (deps.threads !== undefined) {
    registerA2aRoutes(app, {
      authenticate,
      agents: stores.agents,
      tools: stores.plugins,
      submitter: deps.submitter,
      canceller: deps.canceller,
      threads: deps.threads.api,
      statuses: stores.statuses,
      js: deps.js,
      jsm: deps.jsm,
      liveEvents: deps.liveEvents,
      slots,
      heartbeatMs: settings.sseHeartbeatMs,
      cancelWaitMs: settings.a2a?.cancelWaitMs ?? DEFAULT_A2A_CANCEL_WAIT_MS,
      ...(settings.a2a?.publicBaseUrl === undefined ? {} : { publicBaseUrl: settings.a2a.publicBaseUrl }),
      shutdown: shutdown.signal,
      log,
    });
  }
  registerBrowserAccessRoutes(app, {
    authenticate,
    statuses: stores.statuses,
    agents: stores.agents,
    streamTokens: deps.streamTokens,
    consoleEnabled: settings.consoleEnabled,
  });
  return app;
}
