import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeZodError } from '../errors.js';
import { detectToolFormat, importToolDefinition } from './import.js';

const FIXTURES = new URL('../__fixtures__/seeds/', import.meta.url);

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as Record<string, unknown>;
}

describe('importToolDefinition', () => {
  it.each([
    { file: '000-s2-plugin.json', format: 'http-plugin', type: 'HTTP', name: 'search_company_basic' },
    {
      file: '003-s2.2.3-execute-python-script.tool.json',
      format: 'tool-json',
      type: 'SCRIPT',
      name: 'core__execute-python-script',
    },
  ])(
    'recognises $file as $format and converts it to a canonical $type tool',
    ({ file, format, type, name }) => {
      const imported = importToolDefinition(fixture(file));
      expect(imported).toMatchObject({ success: true, format, tool: { type, name } });
    },
  );

  it('recognises a seed 001 payload tool and a seed 004 dynamic tool', () => {
    const [native] = (fixture('001-s3.3b-tools.json') as { tools: unknown[] }).tools;
    const [dynamic] = (fixture('004-s3.1-response.json') as { _dynamic_tools: unknown[] })._dynamic_tools;
    expect(importToolDefinition(native)).toMatchObject({
      success: true,
      format: 'payload-tool',
      tool: { type: 'NATIVE' },
    });
    expect(importToolDefinition(dynamic)).toMatchObject({
      success: true,
      format: 'dynamic-tool',
      tool: { type: 'DYNAMIC' },
    });
  });

  it('takes an already canonical tool as it is', () => {
    const first = importToolDefinition(fixture('000-s2-plugin.json'));
    if (!first.success) throw new Error('fixture did not import');
    expect(importToolDefinition(first.tool)).toEqual({
      success: true,
      format: 'canonical',
      tool: first.tool,
    });
  });

  it('reports an invalid file of a recognised format with the offending path', () => {
    const broken = { ...fixture('000-s2-plugin.json'), execution: { method: 'GET' } };
    const imported = importToolDefinition(broken);
    expect(imported.success).toBe(false);
    if (imported.success || imported.error === undefined) throw new Error('expected a validation error');
    expect(imported.format).toBe('http-plugin');
    expect(describeZodError(imported.error).detail.issues.map((issue) => issue.path)).toEqual([
      'execution.base_url',
    ]);
  });

  it('says so when it cannot tell the format at all', () => {
    for (const value of [null, [], 'tool', { name: 'x' }]) {
      expect(detectToolFormat(value)).toBeUndefined();
      expect(importToolDefinition(value)).toEqual({ success: false, format: undefined, error: undefined });
    }
  });
});
