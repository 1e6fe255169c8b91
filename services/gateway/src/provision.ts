/**
 * Provisioning: creates every JetStream stream and KV bucket of the mesh that does not exist yet, then
 * exits (0 done, 1 failed). Run once per deployment, before or after the services start, logged in as
 * the `provisioner` NATS user of infra/nats/accounts.conf (the only user allowed to create them; the
 * services wait for what is missing). Idempotent: existing resources keep their settings.
 *   NATS_URL=nats://127.0.0.1:4222 NATS_USER=provisioner NATS_PASSWORD=... node services/gateway/dist/provision.js
 */
import { provisionMeshResources } from '@agentmesh/bus';
import { ConfigError, createLogger, loadConfig, natsConnectionOptions } from '@agentmesh/runtime';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { provisionConfigSchema, type ProvisionConfig } from './provision-config.js';

const NAME = 'provisioner';

let config: ProvisionConfig;
let options: ReturnType<typeof natsConnectionOptions>;
try {
  config = loadConfig(provisionConfigSchema);
  options = natsConnectionOptions({ settings: config, name: NAME });
} catch (error) {
  process.stderr.write(`${NAME}: ${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}

const log = createLogger({ service: NAME, level: config.LOG_LEVEL });
let nc: NatsConnection | undefined;
try {
  // One attempt: a deploy step should fail visibly rather than wait forever for NATS.
  nc = await connect({ ...options, waitOnFirstConnect: false, maxReconnectAttempts: 0 });
  const report = await provisionMeshResources(jetstream(nc), {
    replicas: config.NATS_REPLICAS,
    taskRetentionMs: config.TASK_RETENTION_MS,
    nativeProviderTtlMs: config.NATIVE_PROVIDER_TTL_MS,
    recallToolsTtlMs: config.TOOL_CACHE_TTL_MS,
    recallActionsTtlMs: config.ACTION_CACHE_TTL_MS,
  });
  log.info({ created: report.created, existing: report.existing }, 'mesh resources provisioned');
  await nc.drain();
  process.exit(0);
} catch (error) {
  log.fatal({ err: error }, 'provisioning failed');
  await nc?.close().catch(() => undefined);
  process.exit(1);
}
