/**
 * The executor's configuration: the base variables every service reads, plus the vault keys it opens
 * task vaults with, how many tasks it runs at once, the redelivery policy of its JetStream consumer,
 * and the budgets of model and tool calls.
 */
import { baseConfigSchema } from '@agentmesh/runtime';
import { importVaultPrivateKey } from '@agentmesh/vault';
import { z } from 'zod';

/** Private keys by key id (`kid:base64url,kid2:base64url`); several during a key rotation. */
const VaultPrivateKeys = z.string().transform((raw, ctx): ReadonlyMap<string, string> => {
  const keyring = new Map<string, string>();
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) {
    ctx.addIssue({ code: 'custom', message: 'at least one key is required, as kid:base64url' });
    return keyring;
  }
  for (const [index, entry] of entries.entries()) {
    const colon = entry.indexOf(':');
    const kid = colon > 0 ? entry.slice(0, colon) : '';
    if (kid === '') {
      ctx.addIssue({ code: 'custom', message: `entry ${index + 1} is not kid:base64url` });
      continue;
    }
    try {
      importVaultPrivateKey(entry.slice(colon + 1));
    } catch (error) {
      // The reason names the expected format, never the key itself.
      const reason = error instanceof Error ? error.message : 'invalid key';
      ctx.addIssue({ code: 'custom', message: `key "${kid}": ${reason}` });
      continue;
    }
    if (keyring.has(kid)) ctx.addIssue({ code: 'custom', message: `key id "${kid}" appears twice` });
    keyring.set(kid, entry.slice(colon + 1));
  }
  return keyring;
});

const positiveInt = () => z.coerce.number().int().positive();

const HostList = z
  .string()
  .default('')
  .transform((raw) =>
    raw
      .split(',')
      .map((host) => host.trim())
      .filter(Boolean),
  );

export const executorConfigSchema = baseConfigSchema
  .extend({
    VAULT_PRIVATE_KEYS: VaultPrivateKeys.describe(
      'Private X25519 keys that open task vaults, as comma-separated kid:base64url (raw 32-byte keys); keep the previous key during a rotation',
    ),
    MAX_CONCURRENT_TASKS: positiveInt()
      .default(8)
      .describe(
        'Tasks one executor instance runs at the same time; it pulls a task only when one of these slots is free',
      ),
    MAX_DELIVER: positiveInt()
      .default(3)
      .describe(
        'Delivery attempts a task gets; the consumer allows one more, on which the task ends with MAX_DELIVER_EXCEEDED',
      ),
    ACK_WAIT_MS: positiveInt()
      .default(30_000)
      .describe('How long JetStream waits for a sign of life before redelivering a task to another executor'),
    ACK_PROGRESS_MS: positiveInt()
      .default(5_000)
      .describe('Interval of in-progress acks while a task runs; must be well below ACK_WAIT_MS'),
    CONSUMER_MAX_ACK_PENDING: positiveInt()
      .default(1_000)
      .describe(
        "Tasks in flight across all executor instances (the shared consumer's max_ack_pending); at least instances x MAX_CONCURRENT_TASKS",
      ),
    PULL_EXPIRES_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .default(5_000)
      .describe(
        "How long one pull for tasks stays open; also the longest a graceful stop waits for it, and how long a crashed instance's pull can hold tasks back",
      ),
    LLM_TIMEOUT_MS: positiveInt()
      .default(60_000)
      .describe("Budget of one model request attempt, unless the task's model config sets timeout_ms"),
    LLM_MAX_RETRIES: z.coerce
      .number()
      .int()
      .min(0)
      .default(3)
      .describe(
        'Retries of a model call on 429, 5xx and connection errors (with backoff, honouring Retry-After)',
      ),
    TOOL_TIMEOUT_MS: positiveInt()
      .default(30_000)
      .describe('Budget of one tool call whose definition sets no timeout_ms'),
    TOOL_RESULT_MAX_BYTES: positiveInt()
      .default(64 * 1024)
      .describe(
        'Bytes of a tool response passed to the model; longer responses are cut and marked as truncated',
      ),
    OUTBOUND_ALLOW_HOSTS: HostList.describe(
      'Comma-separated hosts, IPs or CIDRs tools may reach although private, loopback or link-local (SSRF allow-list), e.g. 127.0.0.1',
    ),
    EXECUTOR_ID: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe('Name of this instance in logs and spans; default executor-<pid>'),
  })
  .superRefine((config, ctx) => {
    if (config.ACK_PROGRESS_MS >= config.ACK_WAIT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['ACK_PROGRESS_MS'],
        message: `must be below ACK_WAIT_MS (${config.ACK_WAIT_MS}), or running tasks get redelivered`,
      });
    }
  });

export type ExecutorConfig = z.infer<typeof executorConfigSchema>;
