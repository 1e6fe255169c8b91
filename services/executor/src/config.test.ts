import { ConfigError, loadConfig } from '@agentmesh/runtime';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { describe, expect, it } from 'vitest';
import { executorConfigSchema } from './config.js';

const current = generateVaultKeyPair('k2');
const previous = generateVaultKeyPair('k1');

function problemsOf(env: Record<string, string>): ConfigError['problems'] {
  try {
    loadConfig(executorConfigSchema, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('the configuration was accepted');
}

describe('executor configuration', () => {
  it('with only the vault keys set, every other variable takes its default', () => {
    const config = loadConfig(executorConfigSchema, {
      VAULT_PRIVATE_KEYS: `k2:${current.privateKey}, k1:${previous.privateKey}`,
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1, 10.0.0.0/8,',
    });
    expect([...config.VAULT_PRIVATE_KEYS]).toEqual([
      ['k2', current.privateKey],
      ['k1', previous.privateKey],
    ]);
    expect(config).toMatchObject({
      MAX_CONCURRENT_TASKS: 512,
      MAX_DELIVER: 3,
      // Short, so a task whose executor died runs again within seconds; heartbeats keep live ones.
      ACK_WAIT_MS: 3_000,
      // A sixth of ack_wait: two heartbeats a second per task, so NATS faults rarely cost a delivery.
      ACK_PROGRESS_MS: 500,
      PULL_EXPIRES_MS: 2_000,
      OUTBOUND_ALLOW_HOSTS: ['127.0.0.1', '10.0.0.0/8'],
      // The model endpoint has its own allow-list: loopback for tools does not open it for models.
      MODEL_ALLOW_HOSTS: [],
      MAX_SUBTASK_DEPTH: 3,
      MAX_SUBTASKS_PER_TASK: 8,
    });
    expect(config.EXECUTOR_ID).toBeUndefined();
  });

  it('without vault keys, start-up fails naming VAULT_PRIVATE_KEYS', () => {
    expect(problemsOf({}).map((p) => p.variable)).toEqual(['VAULT_PRIVATE_KEYS']);
  });

  it('a malformed key is reported by its key id, without the key material', () => {
    const truncated = current.privateKey.slice(0, 20);
    const problems = problemsOf({ VAULT_PRIVATE_KEYS: `k2:${truncated},nokid` });
    expect(problems.map((p) => p.variable)).toEqual(['VAULT_PRIVATE_KEYS', 'VAULT_PRIVATE_KEYS']);
    expect(problems[0]!.message).toContain('key "k2"');
    expect(problems[1]!.message).toContain('entry 2 is not kid:base64url');
    expect(JSON.stringify(problems)).not.toContain(truncated);
  });

  it('a consumer delivery limit (MAX_DELIVERIES) not above MAX_DELIVER is refused: a task would not get its attempts', () => {
    const problems = problemsOf({
      VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`,
      MAX_DELIVER: '3',
      MAX_DELIVERIES: '3',
    });
    expect(problems.map((p) => p.variable)).toEqual(['MAX_DELIVERIES']);
  });

  it('in-progress acks less frequent than twice per ack_wait are refused, since one late heartbeat would get a running task redelivered', () => {
    const problemsWith = (ackProgressMs: string) =>
      problemsOf({
        VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`,
        ACK_WAIT_MS: '2000',
        ACK_PROGRESS_MS: ackProgressMs,
        PULL_EXPIRES_MS: '1000',
      });
    for (const refused of ['2000', '1001']) {
      expect(problemsWith(refused)).toEqual([
        { variable: 'ACK_PROGRESS_MS', message: expect.stringContaining('at most half of ACK_WAIT_MS') },
      ]);
    }
    const accepted = loadConfig(executorConfigSchema, {
      VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`,
      ACK_WAIT_MS: '2000',
      ACK_PROGRESS_MS: '1000',
      PULL_EXPIRES_MS: '1000',
    });
    expect(accepted.ACK_PROGRESS_MS).toBe(1_000);
  });

  it('a pull open as long as ack_wait is refused, since a task redelivered from a dead pull could land in it again', () => {
    expect(
      problemsOf({
        VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`,
        ACK_WAIT_MS: '4000',
        PULL_EXPIRES_MS: '4000',
      }),
    ).toEqual([{ variable: 'PULL_EXPIRES_MS', message: expect.stringContaining('below ACK_WAIT_MS') }]);
  });

  it('without SCRIPTS_DIR no script tools are configured; native tools and script limits take their defaults', () => {
    const config = loadConfig(executorConfigSchema, { VAULT_PRIVATE_KEYS: `k2:${current.privateKey}` });
    expect(config.SCRIPTS_DIR).toBeUndefined();
    expect(config).toMatchObject({
      RECALL_TIMEOUT_MS: 10_000,
      NATIVE_PROVIDER_TTL_MS: 30_000,
      SCRIPT_TIMEOUT_MS: 30_000,
      SCRIPT_ENV_ALLOW_LIST: ['PATH', 'LANG', 'LC_ALL', 'TZ'],
      SCRIPT_ALLOW_WRITE_PATHS: [],
      SCRIPT_ALLOW_NETWORK_HOSTS: [],
      SCRIPT_CAPABILITIES: [],
      SCRIPT_REQUIRE_ISOLATION: true,
      SCRIPT_STDERR_IS_ERROR: true,
      SCRIPT_CPU_WEIGHT: 100,
      SCRIPT_SCRATCH_MB: 64,
    });
    // Unset: a run's processes together get SCRIPT_MEMORY_MB.
    expect(config.SCRIPT_RUN_MEMORY_MB).toBeUndefined();
  });

  it('when SCRIPT_CPU_WEIGHT is above cgroup v2 cpu.weight range (10000), it is refused', () => {
    expect(
      problemsOf({ VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`, SCRIPT_CPU_WEIGHT: '20000' }),
    ).toEqual([{ variable: 'SCRIPT_CPU_WEIGHT', message: expect.any(String) }]);
  });

  it('SCRIPT_CAPABILITIES is read as a comma list of the capabilities script tools may require', () => {
    const config = loadConfig(executorConfigSchema, {
      VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`,
      SCRIPT_CAPABILITIES: ' gpu, ffmpeg ,,',
    });
    expect(config.SCRIPT_CAPABILITIES).toEqual(['gpu', 'ffmpeg']);
  });

  it('a relative write path and a flag that is no boolean are refused, naming the variable', () => {
    const problems = problemsOf({
      VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`,
      SCRIPT_ALLOW_WRITE_PATHS: '/srv/out, relative/dir',
      SCRIPT_REQUIRE_ISOLATION: 'maybe',
    });
    expect(problems).toEqual([
      { variable: 'SCRIPT_ALLOW_WRITE_PATHS.1', message: 'must be an absolute path' },
      { variable: 'SCRIPT_REQUIRE_ISOLATION', message: 'must be true or false' },
    ]);
  });

  it('a script cache inside the scripts directory, or a default timeout above the maximum, is refused', () => {
    const problems = problemsOf({
      VAULT_PRIVATE_KEYS: `k2:${current.privateKey}`,
      SCRIPTS_DIR: '/srv/tools',
      SCRIPTS_CACHE_DIR: '/srv/tools/.cache',
      SCRIPT_TIMEOUT_MS: '60000',
      SCRIPT_MAX_TIMEOUT_MS: '30000',
    });
    expect(problems.map((p) => p.variable)).toEqual(['SCRIPT_TIMEOUT_MS', 'SCRIPTS_CACHE_DIR']);
  });
});
