/**
 * Provisioning: creates every JetStream stream and KV bucket of the mesh that does not exist yet, then
 * exits (0 done, 1 failed). Run once per deployment, before or after the services start, logged in as
 * the `provisioner` NATS user of infra/nats/accounts.conf (the only user allowed to create them; the
 * services wait for what is missing). Idempotent: existing resources keep their settings.
 *   NATS_URL=nats://127.0.0.1:4222 NATS_USER=provisioner NATS_PASSWORD=... node services/gateway/dist/provision.js
 */
// First, so that a too-old Node.js stops with one clear line before any dependency loads.
import '@agentmesh/runtime/supported-node';
import { provisionMeshResources } from '@agentmesh/bus';
import { runCommand } from '@agentmesh/runtime';
import { jetstream } from '@nats-io/jetstream';
import { provisionConfigSchema } from './provision-config.js';

await runCommand({
  name: 'provisioner',
  configSchema: provisionConfigSchema,
  failure: 'provisioning failed',
  async run({ config, log, nc }) {
    const report = await provisionMeshResources(jetstream(nc), {
      replicas: config.NATS_REPLICAS,
      taskRetentionMs: config.TASK_RETENTION_MS,
      nativeProviderTtlMs: config.NATIVE_PROVIDER_TTL_MS,
      recallToolsTtlMs: config.TOOL_CACHE_TTL_MS,
      recallActionsTtlMs: config.ACTION_CACHE_TTL_MS,
      deadLetterRetentionMs: config.DEAD_LETTER_RETENTION_MS,
    });
    log.info(
      { created: report.created, existing: report.existing, updated: report.updated },
      'mesh resources provisioned',
    );
    return 0;
  },
});
