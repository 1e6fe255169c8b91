import { AssembledTask, type BoundTask } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { VaultTamperedError } from './errors.js';
import { generateVaultKeyPair } from './keys.js';
import { openTaskVault, sealTask } from './task-vault.js';

const keys = generateVaultKeyPair('k1');
const keyring = new Map([[keys.kid, keys.privateKey]]);
const canary = { SEARCH_KEY: 'sk-canary-4417', __model_api_key: 'model-canary-9921' };

function boundTask(): BoundTask {
  return AssembledTask.omit({ runtime_config: true })
    .extend({ runtime_config: AssembledTask.shape.runtime_config.omit({ vault: true }) })
    .parse({
      task_meta: {
        workflow_id: 'search_agent',
        trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
        user_id: 'u1',
        account_id: 'acme',
        submitted_at: '2026-01-01T00:00:00.000Z',
      },
      input: { messages: [{ role: 'user', content: 'hi' }], variables: {} },
      runtime_config: {
        model: {
          provider: 'openai',
          model_name: 'm',
          base_url: 'https://models.example/v1',
          tool_protocol: 'native',
        },
        tools: [
          {
            type: 'HTTP',
            name: 'search',
            description: 'search',
            parameters: { type: 'object', properties: { q: { type: 'string' } } },
            execution: { method: 'GET', url: 'https://api.example/search', param_placement: 'query' },
            auth: { type: 'bearer', token_source: 'SEARCH_KEY' },
          },
        ],
      },
      limits: { max_steps: 10 },
    });
}

/** The task as an executor parses it off the bus. */
function overTheBus(task: unknown): AssembledTask {
  return AssembledTask.parse(JSON.parse(JSON.stringify(task)));
}

describe('sealTask / openTaskVault', () => {
  it('a vault sealed for a task opens in that task after it crossed the bus', () => {
    const task = boundTask();
    expect(openTaskVault(overTheBus(sealTask(task, canary, keys)), keyring)).toEqual(canary);
  });

  it.each([
    ['re-published under another account', (t: AssembledTask) => (t.task_meta.account_id = 'globex')],
    [
      'with its model base_url pointed elsewhere',
      (t: AssembledTask) => (t.runtime_config.model.base_url = 'https://attacker.example/v1'),
    ],
    [
      'with a tool URL pointed elsewhere',
      (t: AssembledTask) => {
        const tool = t.runtime_config.tools[0];
        if (tool?.type === 'HTTP') tool.execution.url = 'https://attacker.example/search';
      },
    ],
    ['for another user', (t: AssembledTask) => (t.task_meta.user_id = 'u2')],
  ])('a captured task %s carries a vault that does not open', (_what, retarget) => {
    const task = boundTask();
    const captured = overTheBus(sealTask(task, canary, keys));
    retarget(captured);
    expect(() => openTaskVault(captured, keyring)).toThrow(VaultTamperedError);
  });
});
