import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '@agentmesh/runtime';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { describe, expect, it } from 'vitest';
import { assemblerConfigSchema, credentialKeys } from './config.js';

const vaultKey = generateVaultKeyPair('exec-1');
const masterKey = randomBytes(32).toString('base64');

const validEnv = {
  NATS_URL: 'nats://127.0.0.1:4222',
  VAULT_KEY_ID: vaultKey.kid,
  VAULT_PUBLIC_KEY: vaultKey.publicKey,
  CREDENTIALS_MASTER_KEY: masterKey,
  CREDENTIALS_MASTER_KEY_ID: 'master-2026',
};

function problemsOf(env: Record<string, string | undefined>): { variable: string; message: string }[] {
  try {
    loadConfig(assemblerConfigSchema, env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  throw new Error('expected the configuration to be rejected');
}

describe('assembler configuration', () => {
  it('a complete environment gives the keys the credential store decrypts with, current first', () => {
    const previous = randomBytes(32).toString('base64');
    const config = loadConfig(assemblerConfigSchema, {
      ...validEnv,
      CREDENTIALS_PREVIOUS_KEYS: `master-2025:${previous}`,
    });
    expect(credentialKeys(config)).toEqual({
      current: { kid: 'master-2026', key: masterKey },
      previous: [{ kid: 'master-2025', key: previous }],
    });
    expect(config.TOOLS_DIR).toBeUndefined();
    expect(config.MAX_CONCURRENT_ASSEMBLIES).toBe(64);
    // Short, so a task whose assembler died is assembled again within seconds; heartbeats keep live ones.
    expect(config.ACK_WAIT_MS).toBe(5_000);
    expect(config.ACK_PROGRESS_MS).toBe(1_000);
  });

  it('in-progress acks less frequent than twice per ack_wait are refused, since one late heartbeat would hand a live assembly over', () => {
    expect(problemsOf({ ...validEnv, ACK_WAIT_MS: '2000', ACK_PROGRESS_MS: '1500' })).toEqual([
      { variable: 'ACK_PROGRESS_MS', message: expect.stringContaining('at most half of ACK_WAIT_MS') },
    ]);
    expect(
      loadConfig(assemblerConfigSchema, { ...validEnv, ACK_WAIT_MS: '2000', ACK_PROGRESS_MS: '1000' }),
    ).toMatchObject({
      ACK_WAIT_MS: 2_000,
      ACK_PROGRESS_MS: 1_000,
    });
  });

  it('without any key the start-up error names every missing key variable', () => {
    const variables = problemsOf({ NATS_URL: 'nats://127.0.0.1:4222' }).map((p) => p.variable);
    expect(variables.sort()).toEqual([
      'CREDENTIALS_MASTER_KEY',
      'CREDENTIALS_MASTER_KEY_ID',
      'VAULT_KEY_ID',
      'VAULT_PUBLIC_KEY',
    ]);
  });

  it('a master key of the wrong length and a vault public key that is not X25519 are rejected without echoing them', () => {
    const shortKey = randomBytes(16).toString('base64');
    const problems = problemsOf({ ...validEnv, CREDENTIALS_MASTER_KEY: shortKey, VAULT_PUBLIC_KEY: 'abc' });
    expect(problems.map((p) => p.variable).sort()).toEqual(['CREDENTIALS_MASTER_KEY', 'VAULT_PUBLIC_KEY']);
    expect(JSON.stringify(problems)).not.toContain(shortKey);
  });

  it('a malformed previous key is reported by its position, never its value', () => {
    const good = randomBytes(32).toString('base64');
    const problems = problemsOf({
      ...validEnv,
      CREDENTIALS_PREVIOUS_KEYS: `old:${good},no-colon-here-secret`,
    });
    expect(problems).toEqual([
      { variable: 'CREDENTIALS_PREVIOUS_KEYS', message: expect.stringContaining('entry 2') },
    ]);
    expect(JSON.stringify(problems)).not.toContain('no-colon-here-secret');
    expect(JSON.stringify(problems)).not.toContain(good);
  });

  it('with a tools directory, it is watched through filesystem events by default; a poll interval and watching off are read', () => {
    const watched = loadConfig(assemblerConfigSchema, { ...validEnv, TOOLS_DIR: '/srv/tools' });
    expect(watched).toMatchObject({ TOOLS_WATCH: true, TOOLS_WATCH_DEBOUNCE_MS: 200 });
    expect(watched.TOOLS_POLL_MS).toBeUndefined();
    const polled = loadConfig(assemblerConfigSchema, {
      ...validEnv,
      TOOLS_DIR: '/srv/tools',
      TOOLS_WATCH: 'false',
      TOOLS_POLL_MS: '1500',
    });
    expect(polled).toMatchObject({ TOOLS_WATCH: false, TOOLS_POLL_MS: 1500 });
  });

  it('a poll interval below 100 ms and a watch flag that is not a boolean are rejected', () => {
    const problems = problemsOf({ ...validEnv, TOOLS_POLL_MS: '10', TOOLS_WATCH: 'sometimes' });
    expect(problems.map((p) => p.variable).sort()).toEqual(['TOOLS_POLL_MS', 'TOOLS_WATCH']);
  });

  it('the in-memory caches are bounded by default, can be turned off with 0, and refuse a negative size', () => {
    expect(loadConfig(assemblerConfigSchema, validEnv)).toMatchObject({
      AGENT_CACHE_MAX_ENTRIES: 5_000,
      TOOL_CACHE_MAX_ENTRIES: 5_000,
      CREDENTIAL_CACHE_MAX_ENTRIES: 20_000,
      RECENT_CANCELS_MAX_ENTRIES: 10_000,
      CLOCK_SKEW_TOLERANCE_MS: 5_000,
    });
    expect(
      loadConfig(assemblerConfigSchema, { ...validEnv, AGENT_CACHE_MAX_ENTRIES: '0' })
        .AGENT_CACHE_MAX_ENTRIES,
    ).toBe(0);
    const problems = problemsOf({ ...validEnv, CREDENTIAL_CACHE_MAX_ENTRIES: '-1' });
    expect(problems.map((p) => p.variable)).toEqual(['CREDENTIAL_CACHE_MAX_ENTRIES']);
  });

  it('every assembler variable is described', () => {
    for (const [name, schema] of Object.entries(assemblerConfigSchema.shape)) {
      expect(schema.description, name).toBeTruthy();
    }
  });
});
