/**
 * The gateway's configuration: where it listens, who may call it (API keys, trusted account headers,
 * admin keys), its limits, and the keys it needs — the executors' vault public key (pre-assembled
 * submissions are sealed here) and the credentials master key (management writes credentials).
 * Parsers never echo a value they reject: several variables hold secrets.
 */
import { DEFAULT_DEAD_LETTER_RETENTION_MS } from '@agentmesh/bus';
import { AccountId, AccountType, THREAD_STREAM_MAX_AGE_SECONDS, ThreadRetention } from '@agentmesh/protocol';
import {
  baseConfigSchema,
  keyIdSchema,
  masterKeyListSchema,
  masterKeySchema,
  vaultPublicKeySchema,
} from '@agentmesh/runtime';
import { z } from 'zod';

export interface ConfiguredApiKey {
  account_id: string;
  account_type?: string;
}

const MIB = 1024 * 1024;

function entries(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/** `key=account[:type],...` → key → grant. */
const apiKeyList = z.string().transform((value, ctx) => {
  const keys = new Map<string, ConfiguredApiKey>();
  entries(value).forEach((entry, index) => {
    // The last `=`: keys may end in base64 padding, account ids never contain one.
    const separator = entry.lastIndexOf('=');
    const key = entry.slice(0, separator);
    const [accountId = '', accountType, ...rest] = entry.slice(separator + 1).split(':');
    const problem =
      separator <= 0
        ? 'is not key=account[:type]'
        : !AccountId.safeParse(accountId).success
          ? 'names an invalid account id'
          : rest.length > 0 || (accountType !== undefined && !AccountType.safeParse(accountType).success)
            ? 'has an invalid account type'
            : keys.has(key)
              ? 'repeats a key'
              : undefined;
    if (problem) ctx.addIssue({ code: 'custom', message: `entry ${index + 1} ${problem}` });
    else
      keys.set(
        key,
        accountType ? { account_id: accountId, account_type: accountType } : { account_id: accountId },
      );
  });
  return keys;
});

const keySet = z.string().transform((value) => new Set(entries(value)));

const DailyCaps = z.strictObject({
  tokens: z.int().nonnegative().optional(),
  cost_usd: z.number().nonnegative().optional(),
});

/** `{"<account>": {"max_age_seconds": n, "max_turns": n}}` → account → a new thread's default retention. */
const accountThreadRetention = z
  .string()
  .transform((raw, ctx): unknown => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of thread retentions by account id' });
      return z.NEVER;
    }
  })
  .pipe(z.record(AccountId, ThreadRetention))
  .transform((retentions) => new Map(Object.entries(retentions)));

/** `{"<account>": {"tokens": n, "cost_usd": n}}` → account → caps. */
const accountDailyCaps = z
  .string()
  .transform((raw, ctx): unknown => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of caps by account id' });
      return z.NEVER;
    }
  })
  .pipe(z.record(AccountId, DailyCaps))
  .transform((caps) => new Map(Object.entries(caps)));

export const gatewayConfigSchema = baseConfigSchema.extend({
  HTTP_HOST: z.string().min(1).default('127.0.0.1').describe('Address the HTTP server binds to'),
  HTTP_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(8080)
    .describe('HTTP port; 0 picks a free one (logged at start-up)'),
  PUBLIC_BASE_URL: z
    .url()
    .transform((url) => url.replace(/\/+$/, ''))
    .optional()
    .describe('Base URL clients reach the gateway at; makes `events_url` absolute (relative otherwise)'),
  API_KEYS: apiKeyList
    .optional()
    .describe(
      'API keys configured at start-up: `key=account[:type],...` (more are stored in KV `mesh_api_keys`)',
    ),
  ADMIN_API_KEYS: keySet
    .optional()
    .describe(
      'Comma-separated keys for the management plane and pre-assembled submissions; on task endpoints an admin key acts for the account in `x-account-id`',
    ),
  TRUST_ACCOUNT_HEADERS: z
    .stringbool()
    .default(false)
    .describe(
      'Trust requests without an API key as internal callers: they name their account in `x-account-id`/`x-account-type` and may use the management plane and pre-assembled submissions. Only behind a network boundary that strips these headers from outside traffic',
    ),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(MIB)
    .describe('Largest request body accepted (HTTP and NATS ingress); larger ones get 413 PAYLOAD_TOO_LARGE'),
  PLUGIN_IMPORT_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * MIB)
    .describe(
      'Largest body of `POST /v1/admin/plugins/import` (an OpenAPI document); larger ones get 413 PAYLOAD_TOO_LARGE',
    ),
  AGENT_VERSIONS_KEPT: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(50)
    .describe(
      'Versions of each agent kept (the newest; the current one always): older ones are deleted after a write, and a pin or rollback to them gets 404',
    ),
  RECALL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(300_000)
    .default(30_000)
    .describe(
      'How long the seed 004 recall endpoints wait for the recall service (over NATS) before answering 502 SERVICE_UNAVAILABLE; above its worst case of upstream time-outs and retries',
    ),
  ACCOUNT_DAILY_TOKEN_CAP: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      'Tokens (prompt + completion, of tasks that ended) one account may use per UTC day; at or over it a submission gets 429 RATE_LIMITED with Retry-After to the next UTC day. Default for every account (ACCOUNT_DAILY_CAPS overrides it). 0: no cap',
    ),
  ACCOUNT_DAILY_COST_CAP_USD: z.coerce
    .number()
    .min(0)
    .default(0)
    .describe(
      "US dollars (by the executors' MODEL_PRICES, of tasks that ended) one account may spend per UTC day; at or over it a submission gets 402 BUDGET_EXCEEDED. Default for every account (ACCOUNT_DAILY_CAPS overrides it). 0: no cap",
    ),
  ACCOUNT_DAILY_CAPS: accountDailyCaps
    .optional()
    .describe(
      'Per-account daily caps as JSON, replacing the defaults field by field: {"acme": {"tokens": 2000000, "cost_usd": 25}}; 0 lifts that cap for the account',
    ),
  ACCOUNT_USAGE_CACHE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(2_000)
    .describe(
      "How long this instance reuses an account's usage of the day (KV mesh_account_usage) read for the daily caps; a capped account's submissions cost one KV get per this interval. 0: read on every submission",
    ),
  AGENT_CACHE_MAX_ENTRIES: z.coerce
    .number()
    .int()
    .min(0)
    .default(5_000)
    .describe(
      'Agents (KV mesh_agents entries, of every account and the shared catalogue) kept in memory, live through a KV watch, so checking at submit that a task names an existing agent reads no KV; the least recently used go first. 0: none, every submission reads KV',
    ),
  SUBMIT_RATE_PER_ACCOUNT: z.coerce
    .number()
    .min(0)
    .default(0)
    .describe(
      'Tasks per second one account may submit through this gateway instance (bursts of up to one second’s worth); beyond it: 429 RATE_LIMITED with Retry-After. 0: no limit',
    ),
  SUBMIT_RATE_PER_API_KEY: z.coerce
    .number()
    .min(0)
    .default(0)
    .describe(
      'Tasks per second one API key may submit through this gateway instance (bursts of up to one second’s worth); beyond it: 429 RATE_LIMITED with Retry-After. 0: no limit',
    ),
  MAX_RUNNING_TASKS_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      'Tasks one account may have running at once (submitted through this gateway instance and not ended); beyond it: 429 RATE_LIMITED with Retry-After. 0: no limit',
    ),
  MAX_RUNNING_TASKS_PER_API_KEY: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      'Tasks one API key may have running at once (submitted through this gateway instance and not ended); beyond it: 429 RATE_LIMITED with Retry-After. 0: no limit',
    ),
  RUNNING_TASKS_RECHECK_MS: z.coerce
    .number()
    .int()
    .min(50)
    .default(30_000)
    .describe(
      'How often, and after how long, a running-task slot whose terminal event this gateway has not seen is checked against the task status store (a final status or no record frees it)',
    ),
  LOST_TASK_REDRIVE_AFTER_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60_000)
    .describe(
      'How long a task this gateway published may go without its terminal event before the gateway checks whether the task queue lost its message (nats-server before 2.10 can after a node fault), and publishes it again if so (see lost-task-watch.ts). 0: off',
    ),
  LOST_TASK_CHECK_MS: z.coerce
    .number()
    .int()
    .min(50)
    .default(10_000)
    .describe(
      "Pace of the lost-task checks; a task is published again after two checks in a row found it lost, so keep it above the executors' ACK_WAIT_MS",
    ),
  LOST_TASK_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024)
    .describe(
      'Bytes of task messages this gateway keeps for publishing again (each until its terminal event); a task published beyond them is not watched',
    ),
  DEAD_LETTER_RETENTION_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(DEFAULT_DEAD_LETTER_RETENTION_MS)
    .describe(
      'How long a dead letter (a task that ran out of deliveries) is kept in MESH_DEAD_LETTERS when this service creates the stream; an existing stream keeps its setting',
    ),
  QUEUE_DEPTH_MAX_AGE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(5_000)
    .describe(
      'How long the task queue depth metric (consumer num_pending per stage) is answered from memory before JetStream is asked again; only read when metrics are exported',
    ),
  SSE_HEARTBEAT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(15_000)
    .describe('Idle time after which an SSE stream gets a `: ping` comment'),
  SSE_MAX_STREAMS: z.coerce
    .number()
    .int()
    .positive()
    .default(1000)
    .describe(
      'Task event streams (SSE) one gateway instance keeps open at once (each holds a connection, and a JetStream consumer while it reads the stream rather than the live feed). Beyond it: 429 RATE_LIMITED with Retry-After',
    ),
  SSE_MAX_STREAMS_PER_CALLER: z.coerce
    .number()
    .int()
    .positive()
    .default(100)
    .describe(
      'Task event streams one caller (an API key; an admin or trusted caller per account) keeps open at once on one instance. Beyond it: 429 RATE_LIMITED with Retry-After',
    ),
  SSE_LIVE_FEED: z
    .stringbool()
    .default(true)
    .describe(
      'Serve event streams from one live feed per gateway (a single JetStream consumer on MESH_EVENTS whose events are kept in memory per task and fanned out); streams it cannot serve read JetStream themselves. false: every stream reads JetStream with a consumer of its own',
    ),
  SSE_BUFFER_MAX_TASKS: z.coerce
    .number()
    .int()
    .positive()
    .default(10_000)
    .describe(
      'Tasks whose recent events the live feed keeps in memory at once; beyond it the least recently updated task is evicted (its followers read JetStream)',
    ),
  SSE_BUFFER_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * MIB)
    .describe(
      'Bytes of events (as SSE frames) the live feed keeps in memory over all tasks; beyond it the least recently updated tasks are evicted',
    ),
  SSE_BUFFER_TASK_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(MIB)
    .describe(
      "Bytes of one task's events the live feed keeps; beyond it the task's oldest events are dropped (a follower still needing them reads JetStream)",
    ),
  SSE_BUFFER_FINISHED_TTL_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(30_000)
    .describe(
      "How long the live feed keeps a finished task's events after its terminal event, for followers that connect just after it ended",
    ),
  CORS_ALLOWED_ORIGINS: z
    .string()
    .transform((value, ctx) => {
      const origins = new Set<string>();
      for (const entry of entries(value)) {
        // An origin is scheme://host[:port], exactly as a browser sends it in `Origin`.
        let parsed: URL | undefined;
        try {
          parsed = new URL(entry);
        } catch {
          parsed = undefined;
        }
        if (parsed === undefined || parsed.origin !== entry) {
          ctx.addIssue({ code: 'custom', message: `"${entry}" is not an origin (scheme://host[:port])` });
        } else origins.add(entry);
      }
      return origins;
    })
    .optional()
    .describe(
      'Browser origins allowed to call the HTTP API cross-origin (CORS), comma-separated, each `scheme://host[:port]`. Unset: no CORS headers at all (same-origin pages, such as /console, need none)',
    ),
  STREAM_TOKEN_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(24 * 60 * 60 * 1000)
    .default(10 * 60 * 1000)
    .describe(
      "How long a stream token (`?token=` on one task's event stream, for browsers' EventSource) opens the stream after it is issued; signed with a key derived from CREDENTIALS_MASTER_KEY, so every gateway sharing it accepts it",
    ),
  SCHEDULER_ENABLED: z
    .stringbool()
    .default(true)
    .describe(
      'Run the schedule firing loop in this gateway (every gateway may: a fire time is claimed by exactly one). The /v1/schedules API is served either way',
    ),
  SCHEDULE_TICK_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(5_000)
    .describe('How often the firing loop looks at the schedules: a firing starts at most this late'),
  SCHEDULE_MISFIRE_GRACE_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(24 * 3600_000)
    .default(60_000)
    .describe(
      "How late a fire time may be and still fire as scheduled; an older one was missed (no gateway ran) and follows the schedule's missed_policy",
    ),
  SCHEDULE_CLAIM_LEASE_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(3600_000)
    .default(30_000)
    .describe(
      "How long a claimed firing stays its gateway's before another may take it over and submit it (same idempotency key: a repeat runs nothing twice)",
    ),
  CONSOLE_ENABLED: z
    .stringbool()
    .default(true)
    .describe('Serve the web console (static pages calling the HTTP API with an API key) at /console'),
  MCP_MAX_SESSIONS: z.coerce
    .number()
    .int()
    .positive()
    .default(1000)
    .describe(
      'MCP sessions (`/mcp`) one gateway instance keeps at once; beyond it the least recently used idle session is closed, and when none is idle a new one gets 429 RATE_LIMITED with Retry-After',
    ),
  MCP_MAX_SESSIONS_PER_CALLER: z.coerce
    .number()
    .int()
    .positive()
    .default(20)
    .describe(
      'MCP sessions one caller (an API key; an admin or trusted caller per account) keeps at once on one instance; beyond it its least recently used idle session is closed, and when none is idle: 429 RATE_LIMITED',
    ),
  MCP_SESSION_IDLE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(600_000)
    .describe(
      'How long an MCP session with no request in flight is kept; after it the session is closed and its client must initialize again',
    ),
  // The A2A door (a2a/).
  A2A_CANCEL_WAIT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(60_000)
    .default(5_000)
    .describe(
      'How long an A2A CancelTask waits for the task to end before answering its state as it stands (the cancel goes on either way)',
    ),
  THREAD_DEFAULT_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(THREAD_STREAM_MAX_AGE_SECONDS)
    .default(0)
    .describe(
      "Retention given to a thread created without one: its entries older than this are not given to a run nor listed, and are purged (the thread's `retention.max_age_seconds`). At most the MESH_THREADS max age (30 days). 0: none (the stream's 30 days)",
    ),
  THREAD_DEFAULT_MAX_TURNS: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(0)
    .describe(
      "Retention given to a thread created without one: only its last this many turns are given to a run and listed, the older are purged (the thread's `retention.max_turns`). 0: none (the stream's 10 000 entries per thread)",
    ),
  THREAD_RETENTION_BY_ACCOUNT: accountThreadRetention
    .optional()
    .describe(
      'Per-account retention given to a thread created without one, as JSON, replacing THREAD_DEFAULT_MAX_AGE_SECONDS / THREAD_DEFAULT_MAX_TURNS for that account: {"acme": {"max_turns": 50, "max_age_seconds": 604800}}',
    ),
  WEBHOOKS_ENABLED: z
    .stringbool()
    .default(true)
    .describe(
      'Run the webhook consumers here: turn task status writes into deliveries and deliver them (the durable consumers are shared by every gateway that runs them). The management routes work either way',
    ),
  WEBHOOK_ALLOW_HOSTS: z
    .string()
    .default('')
    .transform((value) => entries(value))
    .describe(
      'Comma-separated hosts, IPs or CIDRs webhook endpoints may use although private, loopback or link-local (the SSRF allow-list of this deployment), e.g. 127.0.0.1; everything else must be public',
    ),
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .default('5000,300000,1800000,7200000,18000000,36000000,36000000')
    .transform((value, ctx) => {
      const delays = entries(value).map(Number);
      if (delays.length === 0 || delays.some((d) => !Number.isInteger(d) || d < 0)) {
        ctx.addIssue({ code: 'custom', message: 'must be comma-separated non-negative integers (ms)' });
        return z.NEVER;
      }
      return delays;
    })
    .describe(
      'Delays before each retry of a failed webhook delivery, in ms (each with ±20% jitter); after the last one fails the delivery is dead-lettered. Default: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (8 attempts over about 27.6 h)',
    ),
  WEBHOOK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(15_000)
    .describe(
      'Whole budget of one delivery attempt (connect, send, answer headers); past it the attempt failed',
    ),
  WEBHOOK_CONNECT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(5_000)
    .describe('Budget of opening the connection to a webhook endpoint'),
  WEBHOOK_MAX_IN_FLIGHT: z.coerce
    .number()
    .int()
    .min(1)
    .default(64)
    .describe('Webhook deliveries one gateway makes at once, all accounts together'),
  WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(4)
    .describe(
      "Webhook deliveries one gateway makes at once for one account; more of that account's wait in the stream, so a slow or hanging endpoint holds back its own account only",
    ),
  VAULT_KEY_ID: z.string().min(1).max(128).describe("Key id of the executors' vault key pair"),
  VAULT_PUBLIC_KEY: vaultPublicKeySchema.describe(
    "The executors' X25519 public key (base64url): pre-assembled vaults are sealed for it",
  ),
  CREDENTIALS_MASTER_KEY: masterKeySchema.describe(
    'AES-256 key (base64, 32 bytes) encrypting credentials written through the management plane',
  ),
  CREDENTIALS_MASTER_KEY_ID: keyIdSchema.describe(
    'Id of CREDENTIALS_MASTER_KEY, stored with each ciphertext',
  ),
  CREDENTIALS_PREVIOUS_KEYS: masterKeyListSchema()
    .optional()
    .describe('Older master keys still able to decrypt during a rotation: `kid:base64,...`'),
});

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
