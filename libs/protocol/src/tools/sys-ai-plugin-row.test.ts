import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importToolDefinition } from './import.js';

const plugin = JSON.parse(
  readFileSync(new URL('../__fixtures__/seeds/000-s2-plugin.json', import.meta.url), 'utf8'),
) as {
  name: string;
  description: string;
  parameters: unknown;
  execution: Record<string, unknown>;
  auth_config: unknown;
};

/** The seed's plugin as RuoYi stores it: one row of `sys_ai_plugin`, JSON columns as text, audit columns too. */
const exportedRow = {
  plugin_id: 17,
  name: plugin.name,
  title: '企查查企业搜索',
  description: plugin.description,
  icon_url: null,
  parameter_schema: JSON.stringify(plugin.parameters),
  execution_config: JSON.stringify({ ...plugin.execution, auth_config: plugin.auth_config }),
  status: '0',
  required_credentials: '["QCC_KEY","QCC_SECRET"]',
  create_by: 'admin',
  create_time: '2025-01-03 10:00:00',
  remark: null,
};

describe('a sys_ai_plugin row imported as it is', () => {
  it('when a row is exported with its JSON columns as text, it imports as the same tool as the seed 000 plugin it stores', () => {
    const fromRow = importToolDefinition(exportedRow);
    const fromPlugin = importToolDefinition(plugin);
    if (!fromRow.success || !fromPlugin.success) throw new Error('an import failed');
    expect(fromRow.format).toBe('sys-ai-plugin-row');
    expect(fromRow.tool).toMatchObject({
      ...fromPlugin.tool,
      required_credentials: ['QCC_KEY', 'QCC_SECRET'],
    });
    expect(fromRow.tool).toMatchObject({ type: 'HTTP', name: 'search_company_basic' });
  });

  it('when the JSON columns are values and execution_config nests execution and auth_config, it imports the same', () => {
    const nested = {
      ...exportedRow,
      parameter_schema: plugin.parameters,
      execution_config: { execution: plugin.execution, auth_config: plugin.auth_config },
      required_credentials: null,
    };
    const fromRow = importToolDefinition(nested);
    const fromPlugin = importToolDefinition(plugin);
    if (!fromRow.success || !fromPlugin.success) throw new Error('an import failed');
    expect(fromRow.tool).toMatchObject(fromPlugin.tool);
  });

  it("when a row is disabled ('1'), the tool says so", () => {
    const imported = importToolDefinition({ ...exportedRow, status: '1' });
    expect(imported).toMatchObject({ success: true });
    if (imported.success) expect(JSON.stringify(imported.tool)).toMatch(/disabled/);
  });

  it('when a JSON column holds text that is not JSON, the error names the column', () => {
    const imported = importToolDefinition({ ...exportedRow, execution_config: '{method: GET' });
    expect(imported.success).toBe(false);
    if (imported.success || imported.error === undefined) throw new Error('expected a validation error');
    expect(imported.error.issues.map((issue) => issue.path.join('.'))).toContain('execution_config');
    expect(imported.error.issues.map((issue) => issue.message).join()).toMatch(/not JSON/);
  });
});
