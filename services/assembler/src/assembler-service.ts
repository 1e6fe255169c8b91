/**
 * Starts the assembler's work on an open NATS connection: the mesh's streams and buckets, the shared
 * catalogue kept in step with TOOLS_DIR (read at start, then watched) and with the native tools the
 * executors announce, the live tool catalogue, and the received-task consumer. Kept apart from the entry
 * point so tests can run the service in-process.
 */
import {
  AgentStore,
  CredentialStore,
  ensureMeshStreams,
  openMeshBuckets,
  openNativeProvidersBucket,
  PluginStore,
  scopedRegistryView,
  SHARED_CATALOGUE,
  TaskStatusStore,
  type PluginCatalogue,
  type RegistryBucket,
} from '@agentmesh/bus';
import {
  logWaitingForResource,
  type Logger,
  type RunningService,
  type ServiceContext,
} from '@agentmesh/runtime';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { AssembledTaskPublisher } from './assembled-task-publisher.js';
import { credentialKeys, type AssemblerConfig } from './config.js';
import { liveToolLookup } from './live-tool-lookup.js';
import { followNativeProviders } from './native-tool-mirror.js';
import { ReceivedTaskConsumer } from './received-task-consumer.js';
import { watchToolDirectory, type ToolDirectoryWatch } from './tool-directory-watcher.js';
import { syncToolFiles } from './tool-file-sync.js';
import { logToolFileSync } from './tool-file-sync-log.js';
import { TaskFailureRecorder } from './task-failure-recorder.js';

export async function startAssembler({
  config,
  log,
  nc,
}: ServiceContext<AssemblerConfig>): Promise<RunningService> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const wait = { onWaiting: logWaitingForResource(log) };
  await ensureMeshStreams(jsm, { replicas: config.NATS_REPLICAS }, wait);
  const buckets = await openMeshBuckets(
    js,
    { replicas: config.NATS_REPLICAS, only: ['agents', 'plugins', 'credentials', 'tasks'] },
    wait,
  );

  const shared = scopedRegistryView(buckets.plugins, SHARED_CATALOGUE);
  const toolFiles = await keepToolFilesInRegistry(config, log, shared);
  const nativeTools = await followNativeProviders(
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
  const plugins = new PluginStore(buckets.plugins);
  let catalogue: PluginCatalogue;
  try {
    catalogue = await plugins.catalogue((key, error) =>
      log.warn({ tool: key, err: error }, 'registry entry does not parse; the tool is unavailable'),
    );
  } catch (error) {
    nativeTools.stop();
    await toolFiles?.stop();
    throw error;
  }
  const statuses = new TaskStatusStore(buckets.tasks);
  let consumer: ReceivedTaskConsumer;
  try {
    consumer = await ReceivedTaskConsumer.start({
      js,
      jsm,
      log,
      statuses,
      sources: {
        agents: new AgentStore(buckets.agents),
        tools: liveToolLookup(catalogue, plugins),
        credentials: new CredentialStore(buckets.credentials, credentialKeys(config)),
        sealFor: { kid: config.VAULT_KEY_ID, publicKey: config.VAULT_PUBLIC_KEY },
      },
      publisher: new AssembledTaskPublisher(js),
      failures: new TaskFailureRecorder(js, jsm, statuses),
      concurrency: config.MAX_CONCURRENT_ASSEMBLIES,
    });
  } catch (error) {
    catalogue.stop();
    nativeTools.stop();
    await toolFiles?.stop();
    throw error;
  }
  log.info(
    { tools: catalogue.size(), tools_watch: toolFiles?.mode, vault_kid: config.VAULT_KEY_ID },
    'assembler consuming received tasks',
  );

  return {
    async stop() {
      await toolFiles?.stop();
      nativeTools.stop();
      await consumer.stop();
      catalogue.stop();
    },
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
