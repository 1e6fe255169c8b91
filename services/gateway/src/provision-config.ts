/**
 * Configuration of the provisioning run (provision.ts): the runtime's NATS variables (the provisioner's
 * login) and the settings of the streams and buckets it creates. The TTL variables carry the same names
 * and defaults as in the services that would otherwise create those buckets themselves.
 */
import {
  DEFAULT_DEAD_LETTER_RETENTION_MS,
  DEFAULT_NATIVE_PROVIDER_TTL_MS,
  DEFAULT_RECALL_ACTIONS_TTL_MS,
  DEFAULT_RECALL_TOOLS_TTL_MS,
} from '@agentmesh/bus';
import { baseConfigSchema } from '@agentmesh/runtime';
import { z } from 'zod';

const positiveMs = (fallback: number) => z.coerce.number().int().positive().default(fallback);

export const provisionConfigSchema = baseConfigSchema.extend({
  NATIVE_PROVIDER_TTL_MS: positiveMs(DEFAULT_NATIVE_PROVIDER_TTL_MS).describe(
    "Age limit of `mesh_native_providers` (as the executors' NATIVE_PROVIDER_TTL_MS)",
  ),
  TOOL_CACHE_TTL_MS: positiveMs(DEFAULT_RECALL_TOOLS_TTL_MS).describe(
    "Age limit of `mesh_recall_tools` (as the recall service's TOOL_CACHE_TTL_MS)",
  ),
  DEAD_LETTER_RETENTION_MS: positiveMs(DEFAULT_DEAD_LETTER_RETENTION_MS).describe(
    "Max age of MESH_DEAD_LETTERS, the tasks that ran out of deliveries (as the executors' and gateways' DEAD_LETTER_RETENTION_MS)",
  ),
  ACTION_CACHE_TTL_MS: positiveMs(DEFAULT_RECALL_ACTIONS_TTL_MS).describe(
    "Age limit of `mesh_recall_actions` (as the recall service's ACTION_CACHE_TTL_MS)",
  ),
});

export type ProvisionConfig = z.infer<typeof provisionConfigSchema>;
