/**
 * The assembler's configuration: the executors' vault public key it seals for, the master key(s) that
 * decrypt stored credentials, the directory of tool files kept in the registry (and how it is watched),
 * and how much of the registry and the credentials it keeps in memory. No secret has a default.
 */
import {
  baseConfigSchema,
  keyIdSchema,
  masterKeyListSchema,
  masterKeySchema,
  vaultPublicKeySchema,
} from '@agentmesh/runtime';
import type { MasterKey } from '@agentmesh/vault';
import { z } from 'zod';

const assemblerVariables = baseConfigSchema.extend({
  VAULT_KEY_ID: keyIdSchema.describe(
    'Id of the executors’ vault key pair that assembled tasks are sealed for (rotation)',
  ),
  VAULT_PUBLIC_KEY: vaultPublicKeySchema.describe(
    'The executors’ X25519 public key (base64url) that task vaults are sealed for',
  ),
  CREDENTIALS_MASTER_KEY: masterKeySchema.describe(
    'Current master key (32 bytes, base64) that decrypts credentials stored in KV mesh_credentials',
  ),
  CREDENTIALS_MASTER_KEY_ID: keyIdSchema.describe(
    'Id of the current credentials master key, as recorded with each stored credential',
  ),
  CREDENTIALS_PREVIOUS_KEYS: masterKeyListSchema()
    .optional()
    .describe('Older master keys still able to decrypt during a rotation: comma-separated kid:base64'),
  TOOLS_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Directory (searched recursively) of tool files (seed 000 plugin JSON, seed 003 *.tool.json, ...) kept in KV mesh_tools: added, changed and removed with their files; never overwriting a tool managed through the API',
    ),
  TOOLS_WATCH: z
    .stringbool()
    .default(true)
    .describe(
      'Watch TOOLS_DIR while running, so files added, edited or deleted take effect without a restart (false: read once at start). Ignored without TOOLS_DIR',
    ),
  TOOLS_POLL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .optional()
    .describe(
      'Poll TOOLS_DIR every this many ms instead of using filesystem events (inotify): for filesystems that do not report changes, such as NFS. Unset: events, falling back to polling every 2000 ms when they cannot be used',
    ),
  TOOLS_WATCH_DEBOUNCE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(60_000)
    .default(200)
    .describe(
      'Quiet time after the last change in TOOLS_DIR before it is re-read, so a burst of writes makes one update',
    ),
  MAX_CONCURRENT_ASSEMBLIES: z.coerce
    .number()
    .int()
    .min(1)
    .max(1024)
    .default(64)
    .describe(
      'Received tasks assembled at once by one instance. An assembly mostly waits on NATS (a publish ack, a read the caches miss), so a burst of submissions is assembled side by side rather than in rows: at 16, 100 tasks submitted at once reached the executors in seven rows, the last 250 ms after the first',
    ),
  ACK_WAIT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(5_000)
    .describe(
      'How long JetStream waits for a sign of life from the assembler holding a received task before handing it to another instance: how soon a task whose assembler died is assembled again. An assembly takes milliseconds and sends in-progress acks every ACK_PROGRESS_MS while it runs, so the default 5 s leaves four heartbeats to be late on a loaded machine; assembling twice publishes the task once (Nats-Msg-Id). Applied to the existing consumer at start',
    ),
  ACK_PROGRESS_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(1_000)
    .describe(
      'Interval of in-progress acks while a received task is in hand; at most half of ACK_WAIT_MS, so one late heartbeat never hands a live assembly over',
    ),
  AGENT_CACHE_MAX_ENTRIES: cacheSize(
    5_000,
    'Agents (KV mesh_agents entries, of every account and the shared catalogue: names and their kept versions) kept in memory, live through a KV watch, so a task reads no KV for its agent; the least recently used go first. 0: none, every task reads KV',
  ),
  TOOL_CACHE_MAX_ENTRIES: cacheSize(
    5_000,
    'Tools (KV mesh_tools entries, of every account and the shared catalogue) kept in memory, live through a KV watch; the least recently used go first. 0: none, every task reads KV',
  ),
  CREDENTIAL_CACHE_MAX_ENTRIES: cacheSize(
    20_000,
    'Stored credentials (KV mesh_credentials entries, still encrypted: a value is decrypted per task) kept in memory, live through a KV watch; the least recently used go first. 0: none, every task reads KV',
  ),
  CLOCK_SKEW_TOLERANCE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(600_000)
    .default(5_000)
    .describe(
      'Clock difference tolerated between the NATS servers (which stamp each received task) and this host: a task stored less than this after the cancel broadcasts were last (re)subscribed has its status read for a cancel instead',
    ),
  MODEL_ALLOW_HOSTS: z
    .string()
    .default('')
    .transform((raw) =>
      raw
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    )
    .describe(
      "Comma-separated hosts, IPs or CIDRs an agent's model base_url may reach although private, loopback or link-local, for the thread summariser's call (set it as on the executors), e.g. 127.0.0.1 for a model server on this machine",
    ),
  RECENT_CANCELS_MAX_ENTRIES: cacheSize(
    10_000,
    'Cancel requests heard on mesh.control.cancel.> remembered, so a cancelled task is ended without reading its status; the oldest are forgotten first (the executors check the status before they run a task). 0: not listening, every task reads its status',
  ),
});

export const assemblerConfigSchema = assemblerVariables.superRefine((config, ctx) => {
  if (config.ACK_PROGRESS_MS * 2 > config.ACK_WAIT_MS) {
    ctx.addIssue({
      code: 'custom',
      path: ['ACK_PROGRESS_MS'],
      message: `must be at most half of ACK_WAIT_MS (${config.ACK_WAIT_MS}), or one late heartbeat gets an assembly handed to another instance`,
    });
  }
});

function cacheSize(defaultSize: number, description: string) {
  return z.coerce.number().int().min(0).max(1_000_000).default(defaultSize).describe(description);
}

export type AssemblerConfig = z.infer<typeof assemblerConfigSchema>;

/** The keys the credential store decrypts with: the current one first, then the previous ones. */
export function credentialKeys(config: AssemblerConfig): { current: MasterKey; previous: MasterKey[] } {
  return {
    current: { kid: config.CREDENTIALS_MASTER_KEY_ID, key: config.CREDENTIALS_MASTER_KEY },
    previous: config.CREDENTIALS_PREVIOUS_KEYS ?? [],
  };
}
