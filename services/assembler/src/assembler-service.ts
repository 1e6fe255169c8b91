/**
 * Starts the assembler's work on an open NATS connection: the mesh's streams and buckets, the shared
 * catalogue kept in step with TOOLS_DIR (read at start, then watched) and with the native tools the
 * executors announce, in-memory mirrors of the agents, tools and stored credentials kept live by KV
 * watches, the cancel requests it hears, and the received-task consumer. Kept apart from the entry point
 * so tests can run the service in-process.
 */
import {
  DEFAULT_PUBLISH_RETRY,
  ensureMeshStreams,
  ensureThreadStream,
  ThreadStore,
  LiveCredentials,
  openMeshBuckets,
  openNativeProvidersBucket,
  scopedRegistryView,
  SHARED_CATALOGUE,
  startLiveAgents,
  startLiveMcpServers,
  startLiveTools,
  TaskStatusStore,
  type MirrorEvent,
  type RegistryBucket,
} from '@agentmesh/bus';
import {
  logWaitingForResource,
  type Logger,
  type RunningService,
  type ServiceContext,
} from '@agentmesh/runtime';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { AssemblerMetrics, LookupRegistry } from './assembler-metrics.js';
import { AssembledTaskPublisher } from './assembled-task-publisher.js';
import { CancelRequests } from './cancel-requests.js';
import { credentialKeys, type AssemblerConfig } from './config.js';
import { followNativeProviders } from './native-tool-mirror.js';
import { ReceivedTaskConsumer } from './received-task-consumer.js';
import { agentLookup, mcpServerLookup, toolLookup } from './registry-lookups.js';
import { watchToolDirectory, type ToolDirectoryWatch } from './tool-directory-watcher.js';
import { syncToolFiles } from './tool-file-sync.js';
import { logToolFileSync } from './tool-file-sync-log.js';
import { TaskFailureRecorder } from './task-failure-recorder.js';
import { chatCompletionSummariser, ThreadHistoryLoader } from './thread-history.js';
import { OutboundGuard } from '@agentmesh/runtime/outbound-guard';

export async function startAssembler({
  config,
  log,
  nc,
}: ServiceContext<AssemblerConfig>): Promise<RunningService> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const wait = { onWaiting: logWaitingForResource(log) };
  await ensureMeshStreams(
    jsm,
    { replicas: config.NATS_REPLICAS, taskRetentionMs: config.TASK_RETENTION_MS },
    wait,
  );
  const buckets = await openMeshBuckets(
    js,
    {
      replicas: config.NATS_REPLICAS,
      taskRetentionMs: config.TASK_RETENTION_MS,
      only: ['agents', 'tools', 'credentials', 'tasks', 'mcpServers', 'threads'],
    },
    wait,
  );
  await ensureThreadStream(jsm, { replicas: config.NATS_REPLICAS }, wait);
  const threads = new ThreadStore(js, jsm, buckets.threads);

  const shared = scopedRegistryView(buckets.tools, SHARED_CATALOGUE);
  const toolFiles = await keepToolFilesInRegistry(config, log, shared);
  let nativeTools: Awaited<ReturnType<typeof followNativeProviders>> | undefined;
  try {
    nativeTools = await followNativeProviders(
      await openNativeProvidersBucket(js, { replicas: config.NATS_REPLICAS }, wait),
      shared,
      {
        onMirrored: ({ written, refused }) => {
          if (written.length > 0) log.info({ written }, 'native tools mirrored into the shared catalogue');
          for (const { name, holder } of refused) {
            log.warn(
              { tool: name, holder },
              'native tool not mirrored: the catalogue holds another tool of that name',
            );
          }
        },
        onRefused: (key, reason) => log.warn({ key, reason }, 'native tool announcement refused'),
        onError: (error) =>
          log.warn({ err: error }, 'mirroring native tools failed; the next announcement retries'),
      },
    );
    // Tasks needing native tools are checked against the providers: know them all before the first task.
    await nativeTools.ready;
  } catch (error) {
    // runService tries start-up again after a NATS outage: leave no watcher behind.
    nativeTools?.stop();
    await toolFiles?.stop();
    throw error;
  }
  // What the consumer reads from, stopped after it (in reverse order of start).
  const sources: { stop(): void }[] = [];
  const stopSources = (): void => {
    for (const source of sources.splice(0).reverse()) source.stop();
  };
  // One set of instruments for the mirrors (their lookups) and the consumer (its tasks).
  const metrics = new AssemblerMetrics();
  let consumer: ReceivedTaskConsumer;
  let mirrors: { agents: number; tools: number; credentials: number };
  try {
    const agents = await startLiveAgents(buckets.agents, {
      maxEntries: config.AGENT_CACHE_MAX_ENTRIES,
      connection: nc,
      onEvent: logMirrorEvent(log, 'agents'),
      onLookup: metrics.lookupsOf(LookupRegistry.AGENTS),
    });
    sources.push(agents);
    const tools = await startLiveTools(buckets.tools, {
      maxEntries: config.TOOL_CACHE_MAX_ENTRIES,
      connection: nc,
      onEvent: logMirrorEvent(log, 'tools'),
      onLookup: metrics.lookupsOf(LookupRegistry.TOOLS),
    });
    sources.push(tools);
    const mcpServers = await startLiveMcpServers(buckets.mcpServers, {
      maxEntries: config.TOOL_CACHE_MAX_ENTRIES,
      connection: nc,
      onEvent: logMirrorEvent(log, 'mcp_servers'),
    });
    sources.push(mcpServers);
    const credentials = await LiveCredentials.start({
      kv: buckets.credentials,
      keys: credentialKeys(config),
      maxEntries: config.CREDENTIAL_CACHE_MAX_ENTRIES,
      connection: nc,
      onEvent: logMirrorEvent(log, 'credentials'),
      onLookup: metrics.lookupsOf(LookupRegistry.CREDENTIALS),
    });
    sources.push(credentials);
    const cancels = await CancelRequests.start(nc, {
      maxEntries: config.RECENT_CANCELS_MAX_ENTRIES,
      clockSkewMs: config.CLOCK_SKEW_TOLERANCE_MS,
      log,
    });
    sources.push(cancels);
    const statuses = new TaskStatusStore(buckets.tasks);
    mirrors = { agents: agents.size(), tools: tools.size(), credentials: credentials.size() };
    consumer = await ReceivedTaskConsumer.start({
      js,
      jsm,
      log,
      statuses,
      cancels,
      sources: {
        agents: agentLookup(agents),
        tools: toolLookup(tools),
        mcpServers: mcpServerLookup(mcpServers),
        credentials,
        sealFor: { kid: config.VAULT_KEY_ID, publicKey: config.VAULT_PUBLIC_KEY },
        threads: new ThreadHistoryLoader(
          threads,
          chatCompletionSummariser(new OutboundGuard({ allowHosts: config.MODEL_ALLOW_HOSTS })),
        ),
      },
      publisher: new AssembledTaskPublisher(js, {
        ...DEFAULT_PUBLISH_RETRY,
        onRetry: ({ attempt, error }) =>
          log.warn({ err: error, attempt }, 'assembled task publish unanswered; retrying'),
      }),
      nativeProviders: nativeTools.directory,
      failures: new TaskFailureRecorder(js, jsm, statuses, undefined, threads),
      concurrency: config.MAX_CONCURRENT_ASSEMBLIES,
      ackWaitMs: config.ACK_WAIT_MS,
      ackProgressMs: config.ACK_PROGRESS_MS,
      metrics,
    });
  } catch (error) {
    stopSources();
    nativeTools.stop();
    await toolFiles?.stop();
    throw error;
  }
  log.info(
    { cached: mirrors, tools_watch: toolFiles?.mode, vault_kid: config.VAULT_KEY_ID },
    'assembler consuming received tasks',
  );

  return {
    async stop() {
      await toolFiles?.stop();
      nativeTools.stop();
      await consumer.stop();
      stopSources();
    },
  };
}

/** Logs a mirror's state changes (never a value: the events carry none). */
function logMirrorEvent(log: Logger, mirror: 'agents' | 'tools' | 'mcp_servers' | 'credentials') {
  return (event: MirrorEvent): void => {
    switch (event.type) {
      case 'live':
        log.info({ mirror, entries: event.entries, complete: event.complete }, 'cache live');
        return;
      case 'stale':
        if (event.reason === 'watch_failed') {
          log.warn({ mirror, err: event.error }, 'cache watch failed; reading KV until it is back');
        } else {
          log.info({ mirror, reason: event.reason }, 'cache paused; reading KV until it is live again');
        }
        return;
      case 'invalid':
        log.warn({ mirror, key: event.key, err: event.error }, 'stored entry does not parse; it is unusable');
        return;
    }
  };
}

/** Syncs TOOLS_DIR into the registry once, then (unless TOOLS_WATCH=false) after every change. */
async function keepToolFilesInRegistry(
  config: AssemblerConfig,
  log: Logger,
  registry: RegistryBucket,
): Promise<ToolDirectoryWatch | undefined> {
  const dir = config.TOOLS_DIR;
  if (dir === undefined) return undefined;
  const sync = async (): Promise<void> => logToolFileSync(log, dir, await syncToolFiles(registry, dir));
  if (!config.TOOLS_WATCH) {
    await sync();
    return undefined;
  }
  return watchToolDirectory({
    dir,
    debounceMs: config.TOOLS_WATCH_DEBOUNCE_MS,
    pollMs: config.TOOLS_POLL_MS,
    sync,
    log,
  });
}
