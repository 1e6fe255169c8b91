import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '@agentmesh/runtime';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { describe, expect, it } from 'vitest';
import { gatewayConfigSchema } from './config.js';

const keys = generateVaultKeyPair('k1');
const required = {
  VAULT_KEY_ID: keys.kid,
  VAULT_PUBLIC_KEY: keys.publicKey,
  CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
  CREDENTIALS_MASTER_KEY_ID: 'm1',
};

function problems(env: Record<string, string>): string {
  try {
    loadConfig(gatewayConfigSchema, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('the configuration was accepted');
}

describe('gateway configuration', () => {
  it('when a thread retention default is beyond the stream age, not JSON, or an empty retention, the gateway refuses to start naming it', () => {
    expect(problems({ ...required, THREAD_DEFAULT_MAX_AGE_SECONDS: String(31 * 86_400) })).toContain(
      'THREAD_DEFAULT_MAX_AGE_SECONDS',
    );
    expect(problems({ ...required, THREAD_RETENTION_BY_ACCOUNT: '{acme' })).toContain(
      'THREAD_RETENTION_BY_ACCOUNT',
    );
    expect(problems({ ...required, THREAD_RETENTION_BY_ACCOUNT: '{"acme": {}}' })).toContain(
      'THREAD_RETENTION_BY_ACCOUNT',
    );
    const config = loadConfig(gatewayConfigSchema, {
      ...required,
      THREAD_RETENTION_BY_ACCOUNT: '{"acme": {"max_turns": 7}}',
    });
    expect(config.THREAD_RETENTION_BY_ACCOUNT?.get('acme')).toEqual({ max_turns: 7 });
    expect(config.THREAD_DEFAULT_MAX_TURNS).toBe(0);
  });

  it('with only the keys set, it listens on 127.0.0.1:8080, trusts no headers, limits bodies to 1 MiB (16 MiB for a plugin import), waits 30 s for recall and keeps at most 1000 event streams open, 100 per caller', () => {
    const config = loadConfig(gatewayConfigSchema, required);
    expect(config).toMatchObject({
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: 8080,
      TRUST_ACCOUNT_HEADERS: false,
      BODY_LIMIT_BYTES: 1024 * 1024,
      PLUGIN_IMPORT_BODY_LIMIT_BYTES: 16 * 1024 * 1024,
      RECALL_TIMEOUT_MS: 30_000,
      SSE_HEARTBEAT_MS: 15_000,
      SSE_MAX_STREAMS: 1000,
      SSE_MAX_STREAMS_PER_CALLER: 100,
    });
    expect(config.API_KEYS).toBeUndefined();
  });

  it('by default, event streams are served by the live feed, which keeps at most 10,000 tasks and 64 MiB of events (1 MiB per task) and a finished task for 30 s; "false" turns the feed off', () => {
    expect(loadConfig(gatewayConfigSchema, required)).toMatchObject({
      SSE_LIVE_FEED: true,
      SSE_BUFFER_MAX_TASKS: 10_000,
      SSE_BUFFER_MAX_BYTES: 64 * 1024 * 1024,
      SSE_BUFFER_TASK_MAX_BYTES: 1024 * 1024,
      SSE_BUFFER_FINISHED_TTL_MS: 30_000,
    });
    expect(loadConfig(gatewayConfigSchema, { ...required, SSE_LIVE_FEED: 'false' }).SSE_LIVE_FEED).toBe(
      false,
    );
    const refused = problems({ ...required, SSE_BUFFER_MAX_TASKS: '0', SSE_BUFFER_MAX_BYTES: 'lots' });
    expect(refused).toContain('SSE_BUFFER_MAX_TASKS: Too small');
    expect(refused).toContain('SSE_BUFFER_MAX_BYTES: Invalid input');
  });

  it('API_KEYS maps keys (base64 padding and all) to accounts and optional types, ADMIN_API_KEYS is a set, and "false" really is false', () => {
    const config = loadConfig(gatewayConfigSchema, {
      ...required,
      API_KEYS: ' k-one=acme:service , a2V5Mg===beta ',
      ADMIN_API_KEYS: 'a1,a2',
      TRUST_ACCOUNT_HEADERS: 'false',
      PUBLIC_BASE_URL: 'https://mesh.example.com/',
      CREDENTIALS_PREVIOUS_KEYS: `old:${randomBytes(32).toString('base64')}`,
    });
    expect([...config.API_KEYS!]).toEqual([
      ['k-one', { account_id: 'acme', account_type: 'service' }],
      ['a2V5Mg==', { account_id: 'beta' }],
    ]);
    expect([...config.ADMIN_API_KEYS!]).toEqual(['a1', 'a2']);
    expect(config.TRUST_ACCOUNT_HEADERS).toBe(false);
    expect(config.PUBLIC_BASE_URL).toBe('https://mesh.example.com');
    expect(config.CREDENTIALS_PREVIOUS_KEYS).toEqual([{ kid: 'old', key: expect.any(String) }]);
  });

  it('a bad API_KEYS entry is reported by position, never by its value', () => {
    const message = problems({ ...required, API_KEYS: 'good-key=acme,secret-value-xyz=bad account' });
    expect(message).toContain('API_KEYS: entry 2 names an invalid account id');
    expect(message).not.toContain('secret-value-xyz');
  });

  it('missing keys and a master key of the wrong size are each named', () => {
    const message = problems({
      CREDENTIALS_MASTER_KEY: randomBytes(16).toString('base64'),
      VAULT_PUBLIC_KEY: 'short',
    });
    for (const variable of [
      'VAULT_KEY_ID',
      'VAULT_PUBLIC_KEY',
      'CREDENTIALS_MASTER_KEY',
      'CREDENTIALS_MASTER_KEY_ID',
    ]) {
      expect(message).toContain(variable);
    }
    expect(message).toContain('CREDENTIALS_MASTER_KEY: must be 32 random bytes in base64');
  });
});

describe('event stream limits', () => {
  it('SSE_MAX_STREAMS and SSE_MAX_STREAMS_PER_CALLER take positive integers and refuse anything else', () => {
    const config = loadConfig(gatewayConfigSchema, {
      ...required,
      SSE_MAX_STREAMS: '200',
      SSE_MAX_STREAMS_PER_CALLER: '4',
    });
    expect([config.SSE_MAX_STREAMS, config.SSE_MAX_STREAMS_PER_CALLER]).toEqual([200, 4]);
    const message = problems({ ...required, SSE_MAX_STREAMS: '0', SSE_MAX_STREAMS_PER_CALLER: 'many' });
    expect(message).toContain('SSE_MAX_STREAMS');
    expect(message).toContain('SSE_MAX_STREAMS_PER_CALLER');
  });
});
