/**
 * The gateway's HTTP application, built from its dependencies so tests can run it in-process: the
 * inference plane (tasks, SSE events), seed 004's recall endpoints, the management plane, probes, and
 * one error body for every rejection, down to what Node's HTTP parser refuses. JSON bodies are read
 * with a depth limit. Requests are logged and metered as method, route pattern, status and duration —
 * never bodies, headers or the URL with its ids.
 */
import type {
  AgentStore,
  ApiKeyStore,
  CredentialStore,
  McpServerStore,
  ToolStore,
  TaskStatusStore,
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
import { registerHealthRoutes } from './routes/health.js';
import { registerManagementRoutes } from './routes/management.js';
import { registerRecallRoutes } from './routes/recall.js';
import { requestAuthenticator } from './routes/request-caller.js';
import { registerTaskEventRoutes } from './routes/task-events-sse.js';
import { registerTaskRoutes } from './routes/tasks.js';
import type { TaskCanceller } from './task-cancellation.js';
import type { TaskSubmitter } from './task-submission.js';

export interface GatewayStores {
  agents: AgentStore;
  plugins: ToolStore;
  mcpServers: McpServerStore;
  credentials: CredentialStore;
  statuses: TaskStatusStore;
  apiKeys: ApiKeyStore;
}

export interface GatewayAppSettings {
  bodyLimitBytes: number;
  /** Body limit of `POST /v1/admin/plugins/import` (OpenAPI documents). */
  pluginImportBodyLimitBytes: number;
  sseHeartbeatMs: number;
  /** Event streams this instance keeps open at once (SSE_MAX_STREAMS). */
  sseMaxStreams: number;
  /** Event streams one caller keeps open at once (SSE_MAX_STREAMS_PER_CALLER). */
  sseMaxStreamsPerCaller: number;
  /** HTTP callers without an API key are trusted internal callers (TRUST_ACCOUNT_HEADERS). */
  trustAccountHeaders: boolean;
}

export interface GatewayAppDeps {
  log: Logger;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  stores: GatewayStores;
  authenticator: Authenticator;
  submitter: TaskSubmitter;
  canceller: TaskCanceller;
  /** Fans stored task events out to SSE streams; undefined when SSE_LIVE_FEED is off. */
  liveEvents: LiveEventFeed | undefined;
  /** Seed 004's recall endpoints ask the recall service through it. */
  recall: RecallForwarder;
  metrics: GatewayMetrics;
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

  app.addHook('onResponse', async (request, reply) => {
    log.info(
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
  });
  registerTaskEventRoutes(app, {
    authenticate,
    statuses: stores.statuses,
    js: deps.js,
    jsm: deps.jsm,
    liveEvents: deps.liveEvents,
    heartbeatMs: settings.sseHeartbeatMs,
    slots,
    shutdown: shutdown.signal,
    log,
  });
  registerManagementRoutes(app, {
    authenticate,
    agents: stores.agents,
    plugins: stores.plugins,
    mcpServers: stores.mcpServers,
    credentials: stores.credentials,
    apiKeys: stores.apiKeys,
    pluginImportBodyLimitBytes: settings.pluginImportBodyLimitBytes,
    log,
  });
  registerRecallRoutes(app, { authenticate, forwarder: deps.recall });
  return app;
}
