/**
 * The executor's configuration: the base variables every service reads, plus the vault keys it opens
 * task vaults with, how many tasks it runs at once, the redelivery policy of its JetStream consumer,
 * the budgets of model and tool calls, the outbound allow-lists of tools and model endpoints, its native tools (recall, provider announcements) and the
 * sandbox policy of script tools.
 */
import { isAbsolute, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { DEFAULT_DEAD_LETTER_RETENTION_MS } from '@agentmesh/bus';
import { baseConfigSchema } from '@agentmesh/runtime';
import { refusedEnvironmentVariable } from '@agentmesh/script-runner';
import { importVaultPrivateKey } from '@agentmesh/vault';
import { z } from 'zod';
import { ModelPriceTableJson } from './budget/model-prices.js';

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

/** `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`…; `z.coerce.boolean()` would read "false" as true. */
const Flag = z.stringbool({ error: 'must be true or false' });

const AbsolutePath = z.string().refine(isAbsolute, 'must be an absolute path');

/** Comma-separated values, blanks dropped. */
const CommaList = z
  .string()
  .default('')
  .transform((raw) =>
    raw
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

const AbsolutePathList = CommaList.pipe(z.array(AbsolutePath));

export const executorConfigSchema = baseConfigSchema
  .extend({
    VAULT_PRIVATE_KEYS: VaultPrivateKeys.describe(
      'Private X25519 keys that open task vaults, as comma-separated kid:base64url (raw 32-byte keys); keep the previous key during a rotation',
    ),
    VAULT_KEY_HAND_BACK_MS: positiveInt()
      .default(5_000)
      .describe(
        'How long a task sealed for a vault key this executor lacks waits before it is delivered again (to an executor holding the key); after MAX_DELIVER deliveries it ends with an error naming the key',
      ),
    MAX_CONCURRENT_TASKS: positiveInt()
      .default(512)
      .describe(
        'Tasks one executor instance runs at the same time; it pulls a task only when one of these slots is free. A task holds its slot for its whole life, model waits included (but see MAX_WAITING_TASKS), and costs about 60 KB of heap while it runs: slots are cheap, and scripts have their own bound (SCRIPT_MAX_CONCURRENT_RUNS)',
      ),
    MAX_WAITING_TASKS: z.coerce
      .number()
      .int()
      .min(0)
      .default(512)
      .describe(
        "Slots this instance's tasks may lend out at once while they wait for their sub-tasks (an agent tool's call): a lent slot runs another task (the sub-task, or any), and the parent takes it back when its sub-task ends, so parents waiting on every slot never leave their sub-tasks none to run in. Tasks in flight stay under MAX_CONCURRENT_TASKS + this. 0: a waiting parent keeps its slot",
      ),
    MAX_DELIVER: positiveInt()
      .default(3)
      .describe(
        'Attempts a task gets that did work (wrote events; a delivery lost before that does not count); the next attempt ends it with MAX_DELIVER_EXCEEDED',
      ),
    MAX_DELIVERIES: positiveInt()
      .optional()
      .describe(
        "JetStream's delivery limit of the executor consumers (max_deliver), a backstop for tasks whose deliveries keep dying before any work: the delivery that reaches it ends the task with MAX_DELIVER_EXCEEDED. Default 2 × MAX_DELIVER + 1; must be above MAX_DELIVER",
      ),
    APPROVAL_TIMEOUT_MS: positiveInt()
      .default(24 * 60 * 60 * 1000)
      .describe(
        "How long a tool call waits for a person's approval when its tool's policy sets no timeout_ms; then the task ends with APPROVAL_TIMEOUT. Cut to nine tenths of TASK_RETENTION_MS (the task's events must outlive the wait)",
      ),
    APPROVAL_REQUEUE_GRACE_MS: positiveInt()
      .default(10_000)
      .describe(
        'How long a parked task whose approvals are all decided may stay unqueued (its decider died between deciding and queuing it) before an executor queues it',
      ),
    DEAD_LETTER_RETENTION_MS: positiveInt()
      .default(DEFAULT_DEAD_LETTER_RETENTION_MS)
      .describe(
        'How long a dead letter (a task that ran out of deliveries) is kept in MESH_DEAD_LETTERS when this service creates the stream; an existing stream keeps its setting',
      ),
    ACK_WAIT_MS: positiveInt()
      .default(3_000)
      .describe(
        "How long JetStream waits for a sign of life before redelivering a task to another executor: how soon a task whose executor died (or whose delivery went to a dead executor's pull) runs again. The default 3 s with in-progress acks every 0.5 s leaves five heartbeats (2.5 seconds) to be lost or late (a loaded 2-core machine, a GC pause) before a live executor's task is taken over; a takeover of a live task is fenced off by the event stream anyway, and resumes from its events. 3 s keeps the chaos ledger's p99 from an executor kill to the task running again under 10 s, NATS node faults included (5 s gave 11-13 s). Applied to the existing consumers at start",
      ),
    ACK_PROGRESS_MS: positiveInt()
      .default(500)
      .describe(
        "Interval of in-progress acks (heartbeats) while a task runs: one message per task in flight each period, the keep-alive's whole cost. At most half of ACK_WAIT_MS, so one late heartbeat never hands a live task over (the default is a sixth: at 1 s, NATS faults once let heartbeats miss ack_wait often enough that the chaos ledger lost tasks whose deliveries ran out; see README, What a task costs on the bus). Takeover after a kill does not depend on it (it is ACK_WAIT_MS after the dead executor's last heartbeat); a frozen owner's silence is waited for this long (see README, Attempts)",
      ),
    TOOL_ARGS_STREAM_MIN_CHARS: z.coerce
      .number()
      .int()
      .min(0)
      .default(256)
      .describe(
        "Argument text a tool call must reach before it streams as tool_call_delta events; shorter arguments come whole in the call's tool_start only (0: every call streams)",
      ),
    EVENT_DELTA_WINDOW_MS: positiveInt()
      .default(250)
      .describe(
        "Streamed text deltas: the first of a turn's text (or reasoning) is published at once; later ones gather for at most this long while the executor runs one task (the window grows with the tasks in flight, see EVENT_DELTA_BUSY_WINDOW_MS), or until EVENT_DELTA_MIN_CHARS, and leave as one event",
      ),
    EVENT_DELTA_BUSY_WINDOW_MS: positiveInt()
      .default(2_000)
      .describe(
        'The longest streamed text gathers once this executor runs EVENT_DELTA_BUSY_TASKS tasks or more (the window grows linearly from EVENT_DELTA_WINDOW_MS at one task): a busy executor publishes text by size, so fewer, larger events. One below EVENT_DELTA_WINDOW_MS counts as EVENT_DELTA_WINDOW_MS',
      ),
    EVENT_DELTA_BUSY_TASKS: positiveInt()
      .default(8)
      .describe(
        'Tasks in flight on this executor at which the text window reaches EVENT_DELTA_BUSY_WINDOW_MS',
      ),
    EVENT_DELTA_MIN_CHARS: positiveInt()
      .default(256)
      .describe(
        "Gathered text of this many characters is published before its window ends, as soon as the task's previous event is stored: a task's events follow its text's length, not its duration (about 60 tokens an event). This is the threshold of the quiet window; it grows in proportion to the window (2,048 with the defaults' busy window), up to EVENT_DELTA_MAX_CHARS",
      ),
    EVENT_DELTA_MAX_CHARS: positiveInt()
      .default(4096)
      .describe(
        'The longest text event: gathered text of this many characters is published at once, even while the previous event is not stored yet; below EVENT_DELTA_MIN_CHARS it is the size limit for both (1: an event per delta)',
      ),
    CONSUMER_MAX_ACK_PENDING: positiveInt()
      .default(10_000)
      .describe(
        "Tasks in flight across all executor instances per shared consumer (each native class set's consumer's max_ack_pending); at least instances x (MAX_CONCURRENT_TASKS + MAX_WAITING_TASKS)",
      ),
    PULL_EXPIRES_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .default(2_000)
      .describe(
        'How long one pull for tasks stays open; also the longest a graceful stop waits for it, and how long the pull of an instance that died unnoticed (a half-open connection) can still be handed tasks, each of which then waits ACK_WAIT_MS. Below ACK_WAIT_MS, so a task redelivered from a dead pull never lands in that same pull again',
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
    LLM_FIRST_BYTE_TIMEOUT_MS: positiveInt()
      .default(30_000)
      .describe(
        "Longest wait for a model server's first byte (its response headers) in one attempt, unless the agent's model sets first_byte_timeout_ms; past it the attempt counts as a retryable failure (retried, then the next model of the agent's list)",
      ),
    LLM_IDLE_TIMEOUT_MS: positiveInt()
      .default(60_000)
      .describe(
        "Longest silence inside a model server's streamed answer, unless the agent's model sets idle_timeout_ms; past it the attempt counts as a retryable failure",
      ),
    MODEL_LIMIT_LEASE_MS: positiveInt()
      .default(30_000)
      .describe(
        'How long a held concurrency slot of a model key (KV mesh_model_limits) stays taken without renewal: the slots of an executor that died come free after this (renewed every third of it while a call runs)',
      ),
    MODEL_PRICES: ModelPriceTableJson.describe(
      'Prices of models in US dollars per million tokens, as JSON: {"<model_name>": {"input_per_million_usd": 0.15, "output_per_million_usd": 0.6}}, optionally with "cache_read_per_million_usd" and "cache_write_per_million_usd" for prompt-cache tokens (else priced as input); a key `<base_url host>/<model_name>` (e.g. `api.openai.com/gpt-4o-mini`) wins over the bare name. Tasks of a listed model report cost_usd (step_finished, done) and are held to max_cost_usd; others have no cost. Default {}',
    ),
    ACCOUNT_USAGE_FLUSH_MS: positiveInt()
      .default(1_000)
      .describe(
        "How long finished tasks' usage gathers before it is added to their accounts' days (mesh_account_usage), in one write per account and day; an executor that dies loses at most this much",
      ),
    TOOL_TIMEOUT_MS: positiveInt()
      .default(30_000)
      .describe('Budget of one tool call whose definition sets no timeout_ms'),
    TOOL_RESULT_MAX_BYTES: positiveInt()
      .default(64 * 1024)
      .describe(
        'Bytes of a tool response passed to the model; longer responses are cut and marked as truncated',
      ),
    OUTBOUND_ALLOW_HOSTS: CommaList.describe(
      'Comma-separated hosts, IPs or CIDRs tools may reach although private, loopback or link-local (SSRF allow-list), e.g. 127.0.0.1',
    ),
    MODEL_ALLOW_HOSTS: CommaList.describe(
      "Comma-separated hosts, IPs or CIDRs a task's model base_url may reach although private, loopback or link-local (the model endpoint's own SSRF allow-list, same syntax as OUTBOUND_ALLOW_HOSTS and separate from it), e.g. 127.0.0.1 for a model server on this machine",
    ),
    // A2A tools (remote A2A agents; src/tools/a2a/).
    A2A_TOOL_TIMEOUT_MS: positiveInt()
      .default(300_000)
      .describe(
        'Budget of one A2A tool call (a whole remote task) whose definition sets no timeout_ms; past it the remote task is cancelled and the call fails TOOL_TIMEOUT',
      ),
    A2A_CARD_MAX_BYTES: positiveInt()
      .default(256 * 1024)
      .describe("Largest Agent Card an A2A tool's card URL may answer; a larger one is refused"),
    A2A_CARD_TTL_MS: positiveInt()
      .default(300_000)
      .describe(
        "How long an A2A tool's Agent Card is reused (per account, credential and card URL) before it is read again",
      ),
    MCP_TOOL_LIST_TTL_MS: positiveInt()
      .default(300_000)
      .describe(
        "How long an MCP server's tool list is reused before it is listed again, unless the server's definition sets list_ttl_ms; a tools/list_changed notification refreshes it at once",
      ),
    MCP_CONNECTION_IDLE_MS: positiveInt()
      .default(300_000)
      .describe(
        'An MCP server connection unused this long is closed (connections are kept per account and reused)',
      ),
    MCP_MAX_CONNECTIONS: positiveInt()
      .default(256)
      .describe('MCP server connections kept open at once; the least recently used is closed beyond it'),
    MAX_SUBTASK_DEPTH: z.coerce
      .number()
      .int()
      .min(0)
      .max(32)
      .default(3)
      .describe(
        "How deep agent tools may nest sub-tasks: 1 lets a submitted task's agents call agents, but not those agents; 0 turns agent tools off. A deeper call is a SUBTASK_LIMIT_EXCEEDED tool error the model can answer around. A waiting parent lends its executor slot out (see MAX_WAITING_TASKS)",
      ),
    MAX_SUBTASKS_PER_TASK: z.coerce
      .number()
      .int()
      .min(0)
      .default(8)
      .describe(
        'Sub-tasks (agent tool calls) one task may start, across all its attempts (a call re-run after a crash re-attaches to its sub-task and is not counted again); one more is a SUBTASK_LIMIT_EXCEEDED tool error',
      ),
    SUBTASK_SUBMIT_TIMEOUT_MS: positiveInt()
      .default(10_000)
      .describe(
        'How long an agent tool call waits for the gateway to accept its sub-task (NATS mesh.gateway.submit)',
      ),
    RECALL_TIMEOUT_MS: positiveInt()
      .default(10_000)
      .describe("How long the recall_actions tool waits for the recall service's answer"),
    NATIVE_PROVIDER_TTL_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .default(30_000)
      .describe(
        "Lifetime of this executor's announcements in mesh_native_providers (renewed three times per lifetime); a crashed executor stops counting as a provider after it",
      ),
    SCRIPTS_DIR: AbsolutePath.optional().describe(
      'Base directory of script tools (execute_script and *.tool.json scripts); scripts outside it are refused. Unset: this executor provides no script tools',
    ),
    SCRIPTS_CACHE_DIR: AbsolutePath.default(`${tmpdir()}/agentmesh-scripts`).describe(
      'Where script dependency environments and per-run scratch directories live; must not lie inside SCRIPTS_DIR',
    ),
    SCRIPT_TIMEOUT_MS: positiveInt()
      .default(30_000)
      .describe('Budget of one script run whose call names none'),
    SCRIPT_MAX_TIMEOUT_MS: positiveInt()
      .default(300_000)
      .describe('Most a call of execute_script may ask for with timeoutMs'),
    SCRIPT_MAX_INPUT_BYTES: positiveInt()
      .default(1024 * 1024)
      .describe('Largest JSON input a script gets on stdin'),
    SCRIPT_MAX_OUTPUT_BYTES: positiveInt()
      .default(1024 * 1024)
      .describe('Most stdout a script may write; past it the script is killed and the call fails'),
    SCRIPT_CPU_SECONDS: positiveInt().default(30).describe('CPU seconds of one script run (RLIMIT_CPU)'),
    SCRIPT_MAX_CONCURRENT_RUNS: positiveInt()
      .default(8)
      .describe(
        'Script runs (sandboxed processes) at once on this executor; a script call past it waits for a run to end. Task slots (MAX_CONCURRENT_TASKS) are many because a task mostly waits for its model; scripts use CPU and memory',
      ),
    SCRIPT_MEMORY_MB: positiveInt()
      .default(1024)
      .describe('Memory of one script run in MiB (address space for Python, data segment for Node and Bun)'),
    SCRIPT_MAX_PROCESSES: positiveInt()
      .default(64)
      .describe('Processes the sandbox user may have at once (RLIMIT_NPROC)'),
    SCRIPT_RUN_MEMORY_MB: positiveInt()
      .optional()
      .describe(
        "Memory of all of one script run's processes together in MiB (its cgroup's memory limit, scratch files and shared memory included; past it the run is killed). Unset: SCRIPT_MEMORY_MB. Applies where the host lets the executor create cgroups (the start-up log says which mechanism is in force)",
      ),
    SCRIPT_CPU_WEIGHT: positiveInt()
      .max(10_000)
      .default(100)
      .describe(
        'CPU weight of one script run against other runs and the host (cgroup v2 cpu.weight; cpu.shares = weight × 1024 / 100 on cgroup v1); 100 is normal',
      ),
    SCRIPT_SCRATCH_MB: positiveInt()
      .default(64)
      .describe(
        "Size in MiB of each script run's scratch home (HOME and TMPDIR, a tmpfs of its own): all of its files together",
      ),
    SCRIPT_ENV_ALLOW_LIST: CommaList.default(['PATH', 'LANG', 'LC_ALL', 'TZ'])
      .superRefine((names, ctx) => {
        for (const name of names) {
          const refusal = refusedEnvironmentVariable(name);
          if (refusal !== undefined) ctx.addIssue({ code: 'custom', message: `must not name ${refusal}` });
        }
      })
      .describe(
        "Comma-separated names of this executor's environment variables scripts may see; nothing else of it reaches them. Variables that change loading (LD_*, NODE_OPTIONS, PYTHONPATH, ...) are refused",
      ),
    SCRIPT_ALLOW_WRITE_PATHS: AbsolutePathList.describe(
      'Comma-separated absolute directories script tools may be granted write access to (a tool asks in securityContext.fileAccess.allowWrite); empty: none',
    ),
    SCRIPT_ALLOW_READ_PATHS: AbsolutePathList.describe(
      'Comma-separated absolute paths script tools may be granted read access to outside their own directory (a tool asks in securityContext.fileAccess.allowRead); the write paths are readable too; empty: a script reads only its own directory',
    ),
    SCRIPT_RUNTIME_PATHS: AbsolutePathList.describe(
      'Comma-separated absolute paths every script sees read-only, for interpreters that need more than the system directories and their own bin/lib',
    ),
    SCRIPT_ALLOW_NETWORK_HOSTS: CommaList.describe(
      'Comma-separated hosts script tools may be granted network access for (`*` any public host, `*.domain`, a name or an address; loopback and private addresses only when named); a tool asks in securityContext.networkAccess.allowHosts and reaches the granted hosts through a filtering proxy; empty: no network',
    ),
    SCRIPT_CAPABILITIES: CommaList.describe(
      "Comma-separated capabilities this executor's hosts provide to script tools (e.g. `gpu`, `ffmpeg`), matched exactly against a tool's securityContext.requiredCapabilities; a call of a tool needing one not listed fails SERVICE_UNAVAILABLE before the script runs; empty: none, so only tools that require nothing run",
    ),
    SCRIPT_REQUIRE_ISOLATION: Flag.default(true).describe(
      "Refuse to run scripts when the namespace sandbox cannot be created (true), or run them with only the uid drop and rlimits, seeing the host's files and network (false)",
    ),
    SCRIPT_STDERR_IS_ERROR: Flag.default(true).describe(
      'A script that writes to stderr has failed even when it exits 0, as seed 003 says (true); false: only the exit code and the output decide, and stderr goes to the logs',
    ),
    EXECUTOR_ID: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe('Name of this instance in logs and spans; default executor-<pid>'),
  })
  .superRefine((config, ctx) => {
    if (config.SCRIPT_TIMEOUT_MS > config.SCRIPT_MAX_TIMEOUT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['SCRIPT_TIMEOUT_MS'],
        message: `must not exceed SCRIPT_MAX_TIMEOUT_MS (${config.SCRIPT_MAX_TIMEOUT_MS})`,
      });
    }
    if (config.SCRIPTS_DIR !== undefined && isWithin(config.SCRIPTS_DIR, config.SCRIPTS_CACHE_DIR)) {
      ctx.addIssue({
        code: 'custom',
        path: ['SCRIPTS_CACHE_DIR'],
        message: 'must not lie inside SCRIPTS_DIR (scripts must never see dependency environments as files)',
      });
    }
    if (config.MAX_DELIVERIES !== undefined && config.MAX_DELIVERIES <= config.MAX_DELIVER) {
      ctx.addIssue({
        code: 'custom',
        path: ['MAX_DELIVERIES'],
        message: `must be above MAX_DELIVER (${config.MAX_DELIVER}), or a task never gets all its attempts`,
      });
    }
    if (config.PULL_EXPIRES_MS >= config.ACK_WAIT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['PULL_EXPIRES_MS'],
        message: `must be below ACK_WAIT_MS (${config.ACK_WAIT_MS}), or a task redelivered from a dead pull can land in it again`,
      });
    }
    if (config.ACK_PROGRESS_MS * 2 > config.ACK_WAIT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['ACK_PROGRESS_MS'],
        message: `must be at most half of ACK_WAIT_MS (${config.ACK_WAIT_MS}), or one late heartbeat gets a running task redelivered`,
      });
    }
  });

export type ExecutorConfig = z.infer<typeof executorConfigSchema>;

function isWithin(dir: string, candidate: string): boolean {
  const path = relative(dir, candidate);
  return path === '' || (!path.startsWith('..') && !isAbsolute(path));
}
