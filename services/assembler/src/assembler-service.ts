/**
 * Starts the assembler's work on an open NATS connection: the mesh's streams and buckets, the registry
 * seeded from TOOLS_DIR, the live tool catalogue, and the received-task consumer. Kept apart from the
 * entry point so tests can run the service in-process.
 */
import {
  AgentStore,
  CredentialStore,
  ensureMeshStreams,
  openMeshBuckets,
  PluginStore,
  TaskStatusStore,
} from '@agentmesh/bus';
import type { Logger, RunningService, ServiceContext } from '@agentmesh/runtime';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { AssembledTaskPublisher } from './assembled-task-publisher.js';
import { credentialKeys, type AssemblerConfig } from './config.js';
import { liveToolLookup } from './live-tool-lookup.js';
import { ReceivedTaskConsumer } from './received-task-consumer.js';
import { seedRegistry, type SeedReport } from './registry-seeder.js';
import { TaskFailureRecorder } from './task-failure-recorder.js';

export async function startAssembler({
  config,
  log,
  nc,
}: ServiceContext<AssemblerConfig>): Promise<RunningService> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
  const buckets = await openMeshBuckets(js);

  if (config.TOOLS_DIR !== undefined) {
    logSeedReport(log, config.TOOLS_DIR, await seedRegistry(buckets.plugins, config.TOOLS_DIR));
  }
  const plugins = new PluginStore(buckets.plugins);
  const catalogue = await plugins.catalogue((key, error) =>
    log.warn({ tool: key, err: error }, 'registry entry does not parse; the tool is unavailable'),
  );
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
    throw error;
  }
  log.info(
    { tools: catalogue.list().length, vault_kid: config.VAULT_KEY_ID },
    'assembler consuming received tasks',
  );

  return {
    async stop() {
      await consumer.stop();
      catalogue.stop();
    },
  };
}

function logSeedReport(log: Logger, dir: string, report: SeedReport): void {
  for (const { path, reason } of report.rejected) {
    log.warn({ tools_dir: dir, path, reason }, 'tool file rejected; skipped');
  }
  for (const { path, name, winner } of report.shadowed) {
    log.warn(
      { tools_dir: dir, path, tool: name, winner },
      'tool file shadowed by an earlier file of the same name',
    );
  }
  for (const { path, name } of report.kept) {
    log.debug({ tools_dir: dir, path, tool: name }, 'tool already in the registry; file not applied');
  }
  log.info(
    {
      tools_dir: dir,
      added: report.added.map(({ name }) => name),
      kept: report.kept.length,
      shadowed: report.shadowed.length,
      rejected: report.rejected.length,
    },
    'tool registry seeded',
  );
}
