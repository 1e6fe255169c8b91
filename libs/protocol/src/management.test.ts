import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AgentList, ToolList } from './management.js';
import { importToolDefinition } from './tools/import.js';

const seedPlugin = JSON.parse(
  readFileSync(new URL('./__fixtures__/seeds/000-s2-plugin.json', import.meta.url), 'utf8'),
) as unknown;

describe('management answers', () => {
  it('a tool list keeps each tool whole with the scope it was found in', () => {
    const imported = importToolDefinition(seedPlugin);
    if (!imported.success) throw new Error('fixture did not import');
    const listed = { tools: [{ ...imported.tool, scope: 'shared' }] };

    expect(ToolList.parse(listed)).toEqual(listed);
  });

  it('an agent list without a scope label, or with an unknown one, is refused', () => {
    const agent = { workflow_id: 'a', model: { model_name: 'm', base_url: 'http://127.0.0.1:1' } };

    expect(AgentList.safeParse({ agents: [agent] }).success).toBe(false);
    expect(AgentList.safeParse({ agents: [{ ...agent, scope: 'global' }] }).success).toBe(false);
    expect(AgentList.parse({ agents: [{ ...agent, scope: 'account' }] }).agents[0]).toMatchObject({
      workflow_id: 'a',
      scope: 'account',
    });
  });
});
