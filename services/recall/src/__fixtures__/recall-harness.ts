/**
 * What the recall's integration tests share: a real NATS server, recording HTTP servers standing in for
 * ontology-query and the operator tool box, recall instances started in-process on their own connections
 * (with their log lines kept), an in-memory span exporter, a metric reader, and a client that asks `mesh.recall.actions`
 * and reads the answer or the service error.
 */
import type { ActionRecallResponse, DynamicMcpTool, DynamicTool, ErrorBody } from '@agentmesh/protocol';
import { isDynamicMcpTool, Subjects } from '@agentmesh/protocol';
import {
  createLogger,
  injectTraceContext,
  loadConfig,
  startTelemetry,
  type RunningService,
  type Telemetry,
} from '@agentmesh/runtime';
import {
  CollectingMetricReader,
  startNats,
  startRecordingApi,
  type NatsServer,
  type RecordedApiRequest,
  type RecordingApi,
  type RouteSpec,
} from '@agentmesh/testkit';
import { connect, headers as natsHeaders, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { Context } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { recallConfigSchema } from '../config.js';
import { startRecall } from '../recall-service.js';

export const ACCOUNT = { id: 'bdb78b62-6c48-11f0-af96-fa8dcc0a06b2', type: 'user' } as const;

export interface RecallInstance {
  logs: Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

export interface RecallHarness {
  nats: NatsServer;
  client: NatsConnection;
  ontology: RecordingApi;
  toolBox: RecordingApi;
  spans: InMemorySpanExporter;
  /** Collects the metrics of every instance on demand. */
  metrics: CollectingMetricReader;
  /** A recall instance on its own connection; `env` overrides the harness defaults. */
  startInstance(env?: Record<string, string>): Promise<RecallInstance>;
  stop(): Promise<void>;
}

/** Upstream time-out of the harness instances: short, so time-out rows run quickly. */
export const UPSTREAM_TIMEOUT_MS = 400;
export const UPSTREAM_RETRIES = 2;

export async function startHarness(): Promise<RecallHarness> {
  const spans = new InMemorySpanExporter();
  const metrics = new CollectingMetricReader();
  const telemetry: Telemetry = startTelemetry({
    service: 'recall',
    env: {},
    spanProcessors: [new SimpleSpanProcessor({ exporter: spans })],
    metricReaders: [metrics],
  });
  const nats = await startNats();
  const [ontology, toolBox] = await Promise.all([startRecordingApi(), startRecordingApi()]);
  const client = await connect({ servers: nats.url, name: 'recall-test-client' });
  const instances: RecallInstance[] = [];

  const startInstance = async (env: Record<string, string> = {}): Promise<RecallInstance> => {
    const config = loadConfig(recallConfigSchema, {
      NATS_URL: nats.url,
      LOG_LEVEL: 'debug',
      ONTOLOGY_QUERY_URL: ontology.url,
      OPERATOR_INTEGRATION_URL: toolBox.url,
      UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      UPSTREAM_RETRIES: String(UPSTREAM_RETRIES),
      ...env,
    });
    const logs: Array<Record<string, unknown>> = [];
    const log = createLogger({
      service: 'recall',
      level: 'debug',
      destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
    });
    const nc = await connect({ servers: nats.url, name: 'recall' });
    let running: RunningService;
    try {
      running = await startRecall({ config, log, nc });
      // The server has the endpoint's subscription once this round trip is done: requests sent from now
      // on reach this instance.
      await nc.flush();
    } catch (error) {
      await nc.close();
      throw error;
    }
    let stopped: Promise<void> | undefined;
    const instance: RecallInstance = {
      logs,
      stop: () =>
        (stopped ??= (async () => {
          await running.stop();
          await nc.drain();
        })()),
    };
    instances.push(instance);
    return instance;
  };

  return {
    nats,
    client,
    ontology,
    toolBox,
    spans,
    metrics,
    startInstance,
    async stop() {
      await Promise.allSettled(instances.map((instance) => instance.stop()));
      await client.drain().catch(() => undefined);
      await Promise.allSettled([ontology.stop(), toolBox.stop()]);
      await telemetry.shutdown();
      await nats.stop();
    },
  };
}

export type RecallReply =
  | { kind: 'tools'; body: ActionRecallResponse }
  | { kind: 'error'; status: number; description: string; body: ErrorBody };

export interface AskOptions {
  /** `null` sends no account headers. */
  account?: { id?: string; type?: string } | null;
  /** A trace the request belongs to; its context is injected as `traceparent`. */
  traceContext?: Context;
  /** A body sent as is (not JSON-encoded). */
  raw?: string;
}

/** Sends a request to `mesh.recall.actions` and reads the tools or the service error. */
export async function askRecall(
  client: NatsConnection,
  body: unknown,
  options: AskOptions = {},
): Promise<RecallReply> {
  const headers: MsgHdrs = natsHeaders();
  const account = options.account === undefined ? ACCOUNT : options.account;
  if (account?.id !== undefined) headers.set('x-account-id', account.id);
  if (account?.type !== undefined) headers.set('x-account-type', account.type);
  if (options.traceContext) injectTraceContext(headers, options.traceContext);
  const reply = await client.request(Subjects.RECALL_ACTIONS, options.raw ?? JSON.stringify(body), {
    headers,
    timeout: 15_000,
  });
  const code = reply.headers?.get('Nats-Service-Error-Code');
  if (code) {
    return {
      kind: 'error',
      status: Number(code),
      description: reply.headers?.get('Nats-Service-Error') ?? '',
      body: reply.json<ErrorBody>(),
    };
  }
  return { kind: 'tools', body: reply.json<ActionRecallResponse>() };
}

/** The answer's tools, all tool box tools (`api_url`); an MCP tool among them fails the test. */
export function expectTools(
  reply: RecallReply,
): Omit<ActionRecallResponse, '_dynamic_tools'> & { _dynamic_tools: DynamicTool[] } {
  if (reply.kind !== 'tools')
    throw new Error(`expected tools, got ${reply.status} ${JSON.stringify(reply.body)}`);
  const tools = reply.body._dynamic_tools.map((tool) => {
    if (isDynamicMcpTool(tool)) throw new Error(`expected tool box tools, got the MCP tool ${tool.name}`);
    return tool;
  });
  return { ...reply.body, _dynamic_tools: tools };
}

/** The answer's tools, all MCP tools. */
export function expectMcpTools(reply: RecallReply): DynamicMcpTool[] {
  if (reply.kind !== 'tools')
    throw new Error(`expected tools, got ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body._dynamic_tools.map((tool) => {
    if (!isDynamicMcpTool(tool)) throw new Error(`expected MCP tools, got the tool box tool ${tool.name}`);
    return tool;
  });
}

export function expectError(reply: RecallReply): Extract<RecallReply, { kind: 'error' }> {
  if (reply.kind !== 'error') throw new Error(`expected a service error, got ${JSON.stringify(reply.body)}`);
  return reply;
}

// ---- the upstreams' routes ----

export function actionQueryPath(knId: string, atId: string): string {
  return `/api/ontology-query/v1/knowledge-networks/${knId}/action-types/${atId}`;
}

export function toolDetailPath(boxId: string, toolId: string): string {
  return `/api/agent-operator-integration/internal-v1/tool-box/${boxId}/tool/${toolId}`;
}

export function serveActions(
  api: RecordingApi,
  knId: string,
  atId: string,
  reply: RouteSpec['reply'],
  delayMs?: number,
): string {
  const path = actionQueryPath(knId, atId);
  api.route({ method: 'POST', path, reply, ...(delayMs === undefined ? {} : { delayMs }) });
  return path;
}

export function serveTool(
  api: RecordingApi,
  boxId: string,
  toolId: string,
  reply: RouteSpec['reply'],
  delayMs?: number,
): string {
  const path = toolDetailPath(boxId, toolId);
  api.route({ method: 'GET', path, reply, ...(delayMs === undefined ? {} : { delayMs }) });
  return path;
}

export function requestsTo(api: RecordingApi, path: string): RecordedApiRequest[] {
  return api.requests.filter((request) => request.path === path);
}

let counter = 0;
/** Ids unique within the test run, so that one test's cache entries never answer another's requests. */
export function uniqueIds(label: string): { knId: string; atId: string; boxId: string; toolId: string } {
  counter += 1;
  const suffix = `${label}-${counter}-${Date.now().toString(36)}`;
  return { knId: `kn-${suffix}`, atId: `at-${suffix}`, boxId: `box-${suffix}`, toolId: `tool-${suffix}` };
}
