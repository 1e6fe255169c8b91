import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AssembledTask, ClearTaskPayload } from './task.js';
import { canonicalJson, taskBinding } from './task-binding.js';
import { fromPayloadTool } from './tools/adapters.js';

const clearPayload = JSON.parse(
  readFileSync(new URL('./__fixtures__/seeds/001-s2-payload.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

const sealedVault = {
  v: 1,
  alg: 'X25519-HKDF-SHA256-A256GCM',
  kid: 'k1',
  epk: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo',
  iv: 'AAECAwQFBgcICQoL',
  ct: 'eyJRQ0NfS0VZIjoic2stODg4ODg4ODgifQ',
  tag: 'f4ESEwr-3PgsAGMBhw9m7g',
};

/** Seed 001's example as the assembler would publish it, parsed with the bus schema. */
function assembled(): AssembledTask {
  const clear = ClearTaskPayload.parse(clearPayload);
  const { api_key: _movedIntoVault, ...model } = clear.runtime_config.model;
  return AssembledTask.parse({
    task_meta: {
      workflow_id: 'agent_chat',
      trace_id: '3f2b8c1e9d4a4e6b8f1c2a7d5e9b0c13',
      user_id: '10086',
      account_id: 'acme',
      account_type: 'user',
      submitted_at: '2025-12-23T10:00:00.000Z',
    },
    input: clear.input,
    runtime_config: { model, tools: clear.runtime_config.tools.map(fromPayloadTool), vault: sealedVault },
    limits: {},
  });
}

describe('taskBinding', () => {
  it('a task that crossed the bus (JSON with its fields in another order) binds to the same text', () => {
    const task = assembled();
    const reversed = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.map(reversed)
        : value !== null && typeof value === 'object'
          ? Object.fromEntries(
              Object.entries(value)
                .reverse()
                .map(([k, v]) => [k, reversed(v)]),
            )
          : value;
    const received = AssembledTask.parse(JSON.parse(JSON.stringify(reversed(task))));
    expect(taskBinding(received)).toBe(taskBinding(task));
  });

  it.each([
    ['the account', (t: AssembledTask) => (t.task_meta.account_id = 'globex')],
    ['the user', (t: AssembledTask) => (t.task_meta.user_id = 'someone-else')],
    ['the trace id', (t: AssembledTask) => (t.task_meta.trace_id = '0'.repeat(31) + '2')],
    ['the workflow', (t: AssembledTask) => (t.task_meta.workflow_id = 'other_agent')],
    ['the agent version', (t: AssembledTask) => (t.task_meta.agent_version = 4)],
    ['the agent digest', (t: AssembledTask) => (t.task_meta.agent_digest = `sha256:${'e'.repeat(64)}`)],
    [
      'the model base_url',
      (t: AssembledTask) => (t.runtime_config.model.base_url = 'https://evil.example/v1'),
    ],
    [
      "a tool's target",
      (t: AssembledTask) => {
        const tool = t.runtime_config.tools.find((candidate) => candidate.type === 'HTTP');
        if (tool?.type !== 'HTTP') throw new Error('fixture has no HTTP tool');
        tool.execution.url = 'https://evil.example/search';
      },
    ],
    ['the tool list', (t: AssembledTask) => t.runtime_config.tools.pop()],
    ['the messages', (t: AssembledTask) => t.input.messages.push({ role: 'user', content: 'and pay me' })],
    ['the limits', (t: AssembledTask) => (t.limits.max_steps = 999)],
    [
      'which tools may add dynamic tools',
      (t: AssembledTask) => (t.runtime_config.dynamic_tool_sources = ['qichacha']),
    ],
  ])('changing %s changes the binding', (_what, change) => {
    const task = assembled();
    const before = taskBinding(task);
    change(task);
    expect(taskBinding(task)).not.toBe(before);
  });

  it('the vault itself is not part of the binding', () => {
    const task = assembled();
    const other = {
      ...task,
      runtime_config: { ...task.runtime_config, vault: { ...sealedVault, kid: 'k2' } },
    };
    expect(taskBinding(other)).toBe(taskBinding(task));
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves undefined members out', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: undefined }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"z":1}]},"b":1}',
    );
  });

  it('refuses values that are not JSON data', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(TypeError);
  });
});
