/**
 * Starts the recall on an open NATS connection: the upstream clients, the caches (memory, and KV buckets
 * shared by every instance) and the NATS micro service `recall` with its endpoint `mesh.recall.actions`
 * in queue group `recall`, discoverable through `$SRV.PING|INFO|STATS`, and its metrics. Kept apart from the entry point
 * so tests can run the service in-process.
 */
import { createRequire } from 'node:module';
import { ActionQueryResponse, Buckets, Services } from '@agentmesh/protocol';
import { openBucket } from '@agentmesh/bus';
import {
  isSecretKey,
  logWaitingForResource,
  type Logger,
  type RunningService,
  type ServiceContext,
  type WaitedResource,
} from '@agentmesh/runtime';
import { jetstream } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { ActionRecall } from './action-recall.js';
import { KvCacheStore } from './cache/kv-cache-store.js';
import { LayeredCache } from './cache/layered-cache.js';
import { TtlLruCache } from './cache/ttl-lru-cache.js';
import { conversionRulesOf, type RecallConfig } from './config.js';
import { ConvertedTool } from './converted-tool.js';
import { addEndpoint, addMicroService } from './micro-service.js';
import { answerRecallRequest } from './recall-endpoint.js';
import { RecallCache, RecallMetrics } from './recall-metrics.js';
import { ONTOLOGY_QUERY, OntologyQuery } from './upstream/ontology-query.js';
import { OPERATOR_INTEGRATION, ToolBox } from './upstream/tool-box.js';
import { UpstreamClient } from './upstream/upstream-client.js';

/** Every instance joins this queue group, so each request is answered by one of them. */
export const RECALL_QUEUE_GROUP = 'recall';
export const RECALL_ENDPOINT = 'actions';

const { version: SERVICE_VERSION } = createRequire(import.meta.url)('../package.json') as { version: string };

export async function startRecall({
  config,
  log,
  nc,
}: ServiceContext<RecallConfig>): Promise<RunningService> {
  // Created here, after runService registered the meter provider (the metrics API has no proxy).
  const metrics = new RecallMetrics();
  const clientOptions = {
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    retries: config.UPSTREAM_RETRIES,
    metrics,
  };
  const ontologyClient = new UpstreamClient({
    name: ONTOLOGY_QUERY,
    baseUrl: config.ONTOLOGY_QUERY_URL,
    ...clientOptions,
  });
  const toolBoxClient = new UpstreamClient({
    name: OPERATOR_INTEGRATION,
    baseUrl: config.OPERATOR_INTEGRATION_URL,
    ...clientOptions,
  });
  const rules = conversionRulesOf(config);
  const caches = config.CACHE_ENABLED ? await openCaches(nc, config, log, metrics) : {};
  const recall = new ActionRecall({
    ontology: new OntologyQuery(ontologyClient),
    toolBox: new ToolBox(toolBoxClient),
    rules,
    maxIdentities: config.MAX_IDENTITIES_PER_REQUEST,
    ...caches,
  });

  const inFlight = new Set<Promise<void>>();
  const service = await addMicroService(nc, {
    name: Services.RECALL.name,
    version: SERVICE_VERSION,
    description: 'Seed 004 action recall: the actions of an ontology object as ready-to-call dynamic tools',
    queue: RECALL_QUEUE_GROUP,
  });
  addEndpoint(service, {
    name: RECALL_ENDPOINT,
    subject: Services.RECALL.subject,
    handler: (msg) => {
      const answering = answerRecallRequest(msg, { recall, log, metrics }).finally(() =>
        inFlight.delete(answering),
      );
      inFlight.add(answering);
    },
    onError: (error) => log.error({ err: error }, 'recall endpoint failed'),
  });
  log.info(
    {
      subject: Services.RECALL.subject,
      queue: RECALL_QUEUE_GROUP,
      cache: config.CACHE_ENABLED,
      conversion_rules: rules,
      version: SERVICE_VERSION,
    },
    'recall answering',
  );

  return {
    async stop() {
      await service.stop();
      await Promise.allSettled([...inFlight]);
      await Promise.allSettled([ontologyClient.close(), toolBoxClient.close()]);
    },
  };
}

interface Caches {
  actionCache: LayeredCache<ActionQueryResponse>;
  toolCache: LayeredCache<ConvertedTool>;
}

async function openCaches(
  nc: NatsConnection,
  config: RecallConfig,
  log: Logger,
  metrics: RecallMetrics,
): Promise<Caches> {
  const shared = await openSharedBuckets(nc, config, log);
  const onSharedError = (bucket: string) => (operation: 'get' | 'put', error: unknown) =>
    log.warn({ bucket, operation, err: error }, 'shared recall cache unavailable; going on without it');
  return {
    actionCache: new LayeredCache({
      memory: new TtlLruCache({
        maxEntries: config.ACTION_CACHE_MAX_ENTRIES,
        ttlMs: config.ACTION_CACHE_TTL_MS,
      }),
      shared:
        shared &&
        new KvCacheStore({
          kv: shared.actions,
          schema: ActionQueryResponse,
          ttlMs: config.ACTION_CACHE_TTL_MS,
        }),
      // Fixed parameters that look like secrets are never written to the bus; such answers stay in memory.
      shareable: (answer) => !answer.actions.some((action) => carriesSecretKey(action.parameters)),
      onSharedError: onSharedError(Buckets.RECALL_ACTIONS),
      onLookup: (source) => metrics.cacheLookup(RecallCache.ACTIONS, source),
    }),
    toolCache: new LayeredCache({
      memory: new TtlLruCache({ maxEntries: config.TOOL_CACHE_MAX_ENTRIES, ttlMs: config.TOOL_CACHE_TTL_MS }),
      shared:
        shared &&
        new KvCacheStore({ kv: shared.tools, schema: ConvertedTool, ttlMs: config.TOOL_CACHE_TTL_MS }),
      onSharedError: onSharedError(Buckets.RECALL_TOOLS),
      onLookup: (source) => metrics.cacheLookup(RecallCache.TOOLS, source),
    }),
  };
}

/**
 * The KV buckets, created when missing (and this NATS user may). Their age limit only bounds their size
 * (entries carry their own expiry). Without them — no JetStream, or not provisioned where recall may not
 * create them — the caches are per instance: recall still works, just with more upstream calls.
 */
async function openSharedBuckets(
  nc: NatsConnection,
  config: RecallConfig,
  log: Logger,
): Promise<{ tools: KV; actions: KV } | undefined> {
  const js = jetstream(nc);
  // A cache is not worth waiting for: the first report of a missing bucket ends the wait.
  const giveUp = new AbortController();
  const wait = {
    signal: giveUp.signal,
    onWaiting: (missing: WaitedResource) => {
      logWaitingForResource(log)(missing);
      giveUp.abort();
    },
  };
  try {
    const [tools, actions] = await Promise.all([
      openBucket(
        js,
        Buckets.RECALL_TOOLS,
        { ttl: config.TOOL_CACHE_TTL_MS, replicas: config.NATS_REPLICAS },
        wait,
      ),
      openBucket(
        js,
        Buckets.RECALL_ACTIONS,
        { ttl: config.ACTION_CACHE_TTL_MS, replicas: config.NATS_REPLICAS },
        wait,
      ),
    ]);
    return { tools, actions };
  } catch (error) {
    log.warn({ err: error }, 'recall KV buckets unavailable; caching in memory only');
    return undefined;
  }
}

function carriesSecretKey(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object' || depth > 8) return false;
  if (Array.isArray(value)) return value.some((item) => carriesSecretKey(item, depth + 1));
  return Object.entries(value).some(([key, item]) => isSecretKey(key) || carriesSecretKey(item, depth + 1));
}
