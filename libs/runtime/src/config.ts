/**
 * Service configuration: read once from the environment, validated by a zod schema, frozen.
 * A bad or missing variable stops start-up with one message naming each variable and what is wrong.
 */
import { z } from 'zod';

/** Variables every service understands. Services extend this schema with their own. */
export const baseConfigSchema = z.object({
  NATS_URL: z
    .string()
    .min(1)
    .default('nats://127.0.0.1:4222')
    .describe(
      'Comma-separated NATS server URLs the service connects to; `nats://user:password@host:port` (percent-encoded) or `nats://token@host:port` also logs in (secret then: never logged)',
    ),
  NATS_USER: z
    .string()
    .min(1)
    .optional()
    .describe(
      'NATS user name (user/password login; needs NATS_PASSWORD). `nats://user:password@host:port` in NATS_URL does the same',
    ),
  NATS_PASSWORD: z.string().min(1).optional().describe('Password of NATS_USER (secret)'),
  NATS_TOKEN: z.string().min(1).optional().describe('NATS token login (secret)'),
  NATS_NKEY_SEED: z
    .string()
    .regex(/^SU[A-Z2-7]{56}$/, 'must be an NKEY user seed (58 characters starting with SU)')
    .optional()
    .describe('NKEY user seed (`SU…`) the service signs the server nonce with (secret)'),
  NATS_NKEY_SEED_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('File holding the NKEY user seed instead of NATS_NKEY_SEED; read again on every reconnect'),
  NATS_CREDS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Decentralised-auth credentials file (user JWT + seed, `nsc` format); read again on every reconnect',
    ),
  NATS_TLS_CA: z
    .string()
    .min(1)
    .optional()
    .describe(
      "PEM file of the CA that signed the NATS servers' certificates; setting any NATS_TLS_* turns TLS on",
    ),
  NATS_TLS_CERT: z
    .string()
    .min(1)
    .optional()
    .describe('PEM client certificate for NATS servers that verify clients (mutual TLS); needs NATS_TLS_KEY'),
  NATS_TLS_KEY: z.string().min(1).optional().describe('PEM private key of NATS_TLS_CERT'),
  NATS_INBOX_PREFIX: z
    .string()
    .regex(
      /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/,
      'must be one or more subject tokens of A-Z, a-z, 0-9, "_", "-" or "$" without wildcards',
    )
    .optional()
    .describe(
      "Prefix of the reply subjects of this service's requests (JetStream and KV calls included); default `_INBOX_<service name>`, so NATS permissions can give each user its own inbox",
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Minimum level of log lines written to stdout'),
  LOG_FORMAT: z
    .enum(['json', 'pretty'])
    .optional()
    .describe(
      'How log lines are written: `json` (one JSON object a line, for collectors) or `pretty` (coloured, one readable line each, for people). Default: `pretty` when stdout is a terminal, else `json`',
    ),
  METRICS_PORT: z.coerce
    .number()
    .int()
    .min(1)
    .max(65535)
    .optional()
    .describe(
      "Port of this service's Prometheus endpoint (`http://METRICS_HOST:METRICS_PORT/metrics`); unset: no endpoint. Give each service its own port. A port that cannot be bound stops start-up",
    ),
  METRICS_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe(
      'Address the Prometheus endpoint listens on (with METRICS_PORT); `0.0.0.0` for a scraper on another host',
    ),
  OTEL_METRICS_EXPORTER: z
    .string()
    .optional()
    .describe(
      'OpenTelemetry metric exporters, comma-separated (`otlp`, `console`, `prometheus`, `none`); unset: metrics are recorded only when METRICS_PORT is set. `prometheus` needs METRICS_PORT and is served there; it cannot be combined with `otlp`/`console`',
    ),
  NATS_REPLICAS: z.coerce
    .number()
    .int()
    .min(1)
    .max(5)
    .default(1)
    .describe('Replicas of the streams and KV buckets a service creates (3 on the 3-node cluster of infra/)'),
  TASK_RETENTION_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(24 * 60 * 60 * 1000)
    .describe(
      "How long a task's events (MESH_EVENTS max age) and its status record (`mesh_tasks` TTL) are kept when a service or the provisioning creates them; one value for both, so no status outlives its events. Existing resources keep their settings",
    ),
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(10_000)
    .describe('How long a graceful shutdown may take before the process exits anyway'),
  STARTUP_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(180_000)
    .describe(
      'How long start-up keeps retrying while NATS/JetStream is unavailable (a paused server, a cluster electing a leader) before the service exits',
    ),
});

export type BaseConfig = z.infer<typeof baseConfigSchema>;

/** Thrown when the environment does not satisfy a service's config schema. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'INVALID_REQUEST';
  readonly retryable = false;

  constructor(
    readonly problems: ReadonlyArray<{ variable: string; message: string }>,
    options?: ErrorOptions,
  ) {
    super(
      `invalid configuration:\n${problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n')}`,
      options,
    );
  }
}

/** Parses `env` with `schema` and returns a deeply frozen config, or throws a {@link ConfigError}. */
export function loadConfig<S extends z.ZodType<Record<string, unknown>>>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.infer<S>> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => ({
      variable: issue.path.map(String).join('.') || '(environment)',
      message: issue.message,
    }));
    throw new ConfigError(problems, { cause: parsed.error });
  }
  return Object.freeze(parsed.data);
}
