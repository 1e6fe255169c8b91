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
    .describe('Comma-separated NATS server URLs the service connects to'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Minimum level of log lines written to stdout'),
  NATS_REPLICAS: z.coerce
    .number()
    .int()
    .min(1)
    .max(5)
    .default(1)
    .describe('Replicas of the streams and KV buckets a service creates (3 on the 3-node cluster of infra/)'),
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(10_000)
    .describe('How long a graceful shutdown may take before the process exits anyway'),
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
