import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rejectionPaths } from './__fixtures__/rejection-paths.js';
import { AssembledTask, ClearTaskPayload, ReceivedTask, TaskLimits } from './task.js';
import { fromPayloadTool } from './tools/adapters.js';
import { MODEL_API_KEY_VAULT_ENTRY, SealedVault } from './vault.js';

const TRACE = '3f2b8c1e9d4a4e6b8f1c2a7d5e9b0c13';

const clearPayload = JSON.parse(
  readFileSync(new URL('./__fixtures__/seeds/001-s2-payload.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

const sealedVault = {
  v: 1,
  alg: 'X25519-HKDF-SHA256-A256GCM',
  kid: 'executors-2025-12',
  epk: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo',
  iv: 'AAECAwQFBgcICQoL',
  ct: 'eyJRQ0NfS0VZIjoic2stODg4ODg4ODgifQ',
  tag: 'f4ESEwr-3PgsAGMBhw9m7g',
};

function assembledTask(): Record<string, unknown> {
  const clear = ClearTaskPayload.parse(clearPayload);
  const { api_key: _movedIntoVault, ...model } = clear.runtime_config.model;
  return {
    task_meta: {
      workflow_id: 'agent_chat',
      trace_id: TRACE,
      user_id: '10086',
      account_id: 'bdb78b62-6c48-11f0-af96-fa8dcc0a06b2',
      account_type: 'user',
      submitted_at: '2025-12-23T10:00:00.000Z',
    },
    input: clear.input,
    runtime_config: {
      model,
      tools: clear.runtime_config.tools.map(fromPayloadTool),
      vault: { ...sealedVault },
    },
    limits: { max_steps: 10 },
  };
}

describe('ClearTaskPayload (seed 001, trusted upstream)', () => {
  it("normalises seed 001's UUID trace id and keeps the clear vault and model key", () => {
    const parsed = ClearTaskPayload.parse(clearPayload);
    expect(parsed.task_meta.trace_id).toBe(TRACE);
    expect(parsed.runtime_config.model.api_key).toBe('sk-oneapi-token...');
    expect(parsed.runtime_config.vault).toEqual({ QCC_KEY: 'sk-88888888', FEISHU_TOKEN: 't-12345678' });
  });

  it("accepts RuoYi's numeric user id as a string", () => {
    const numeric = { ...clearPayload, task_meta: { workflow_id: 'agent_chat', user_id: 10086 } };
    expect(ClearTaskPayload.parse(numeric).task_meta.user_id).toBe('10086');
  });

  it('rejects a vault entry using the reserved model-key name, naming it', () => {
    const runtime = clearPayload.runtime_config as Record<string, unknown>;
    const smuggled = {
      ...clearPayload,
      runtime_config: { ...runtime, vault: { [MODEL_API_KEY_VAULT_ENTRY]: 'sk-other' } },
    };
    expect(rejectionPaths(ClearTaskPayload, smuggled)).toEqual(['runtime_config.vault.__model_api_key']);
  });

  it('rejects two tools with the same name at the second one', () => {
    const runtime = clearPayload.runtime_config as { tools: unknown[] };
    const duplicated = {
      ...clearPayload,
      runtime_config: { ...runtime, tools: [runtime.tools[0], runtime.tools[0]] },
    };
    expect(rejectionPaths(ClearTaskPayload, duplicated)).toEqual(['runtime_config.tools[1].name']);
  });

  it('rejects an empty conversation at input.messages', () => {
    const empty = { ...clearPayload, input: { messages: [] } };
    expect(rejectionPaths(ClearTaskPayload, empty)).toEqual(['input.messages']);
  });
});

describe('AssembledTask (on the bus)', () => {
  it('accepts a task with a sealed vault and no model key', () => {
    const result = AssembledTask.safeParse(assembledTask());
    expect(result.error?.issues).toBeUndefined();
    expect(result.data?.runtime_config.model.tool_protocol).toBe('native');
  });

  it('rejects a model.api_key in clear, naming the field', () => {
    const task = assembledTask() as { runtime_config: { model: Record<string, unknown> } };
    task.runtime_config.model.api_key = 'sk-oneapi-token...';
    expect(rejectionPaths(AssembledTask, task)).toEqual(['runtime_config.model.api_key']);
  });

  it('rejects a clear vault where the sealed one belongs', () => {
    const task = assembledTask() as { runtime_config: Record<string, unknown> };
    task.runtime_config.vault = { QCC_KEY: 'sk-88888888' };
    expect(rejectionPaths(AssembledTask, task)).toContain('runtime_config.vault.v');
  });

  it('rejects secrets riding next to the sealed vault or the task', () => {
    const beside = assembledTask() as { runtime_config: { vault: Record<string, unknown> } };
    beside.runtime_config.vault.clear = { QCC_KEY: 'sk-88888888' };
    expect(rejectionPaths(AssembledTask, beside)).toEqual(['runtime_config.vault.clear']);
    const top = { ...assembledTask(), credentials: { QCC_KEY: 'sk-88888888' } };
    expect(rejectionPaths(AssembledTask, top)).toEqual(['credentials']);
  });

  it('rejects an upstream UUID trace id: the bus carries the canonical form only', () => {
    const task = assembledTask() as { task_meta: Record<string, unknown> };
    task.task_meta.trace_id = '3f2b8c1e-9d4a-4e6b-8f1c-2a7d5e9b0c13';
    expect(rejectionPaths(AssembledTask, task)).toEqual(['task_meta.trace_id']);
  });

  it('has no attempt field: delivery attempts belong to JetStream', () => {
    const withAttempt = { ...assembledTask(), attempt: 2 };
    expect(rejectionPaths(AssembledTask, withAttempt)).toEqual(['attempt']);
  });
});

describe('SealedVault', () => {
  it.each([
    { field: 'v', value: 2 },
    { field: 'alg', value: 'RSA-OAEP' },
    { field: 'kid', value: '' },
    { field: 'epk', value: 'not base64url!' },
    { field: 'iv', value: '' },
    { field: 'ct', value: 'a+b/c=' },
    { field: 'tag', value: undefined },
  ])('rejects a bad $field', ({ field, value }) => {
    const vault: Record<string, unknown> = { ...sealedVault, [field]: value };
    if (value === undefined) delete vault[field];
    expect(rejectionPaths(SealedVault, vault)).toEqual([field]);
  });
});

describe('ReceivedTask', () => {
  it('carries a pre-assembled runtime config only in sealed form', () => {
    const { limits: _limits, ...received } = assembledTask();
    expect(ReceivedTask.safeParse({ ...received, idempotency_key: 'order-42' }).success).toBe(true);
    const { runtime_config: _runtime, ...withoutConfig } = received;
    expect(ReceivedTask.safeParse(withoutConfig).success).toBe(true);
  });
});

describe('TaskLimits', () => {
  it('defaults max_steps to 10 and rejects non-positive budgets', () => {
    expect(TaskLimits.parse({})).toEqual({ max_steps: 10 });
    expect(rejectionPaths(TaskLimits, { max_steps: 0 })).toEqual(['max_steps']);
    expect(rejectionPaths(TaskLimits, { deadline_ms: -1 })).toEqual(['deadline_ms']);
  });
});
