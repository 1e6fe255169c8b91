import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { baseConfigSchema, ConfigError, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('when the environment is empty, the base defaults apply and the config is frozen', () => {
    const config = loadConfig(baseConfigSchema, {});
    expect(config).toEqual({
      NATS_URL: 'nats://127.0.0.1:4222',
      LOG_LEVEL: 'info',
      METRICS_HOST: '127.0.0.1',
      NATS_REPLICAS: 1,
      TASK_RETENTION_MS: 86_400_000,
      SHUTDOWN_TIMEOUT_MS: 10_000,
      STARTUP_TIMEOUT_MS: 180_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('when several variables are bad or missing, one error names each of them and what is wrong', () => {
    const schema = baseConfigSchema.extend({
      MASTER_KEY: z.string().min(32).describe('credentials master key'),
      PORT: z.coerce.number().int().describe('HTTP port'),
    });
    let error: unknown;
    try {
      loadConfig(schema, { LOG_LEVEL: 'loud', PORT: 'eighty' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const configError = error as ConfigError;
    expect(configError.problems.map((p) => p.variable).sort()).toEqual(['LOG_LEVEL', 'MASTER_KEY', 'PORT']);
    expect(configError.message).toMatch(/LOG_LEVEL: .+/);
    expect(configError.message).toMatch(/MASTER_KEY: .+/);
    expect(configError.message).toMatch(/PORT: .+/);
  });

  it('when a number arrives as a string, it is coerced', () => {
    expect(loadConfig(baseConfigSchema, { SHUTDOWN_TIMEOUT_MS: '2500' }).SHUTDOWN_TIMEOUT_MS).toBe(2500);
  });
});
