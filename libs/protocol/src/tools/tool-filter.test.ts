import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { ToolDefinition } from './canonical.js';
import { importToolDefinition } from './import.js';
import { filterTools, toolNamespace } from './tool-filter.js';

const FIXTURES = new URL('../__fixtures__/seeds/', import.meta.url);
const seedFixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as unknown;
function importTool(json: unknown): ToolDefinition {
  const imported = importToolDefinition(json);
  if (!imported.success) throw new Error(`fixture is not a tool: ${String(imported.error)}`);
  return imported.tool;
}
const qichachaTool = (): ToolDefinition => importTool(seedFixture('000-s2-plugin.json'));

const dataProcessor = importTool(seedFixture('003-s2.2.2-core-fields-external-script.tool.json'));
const imageFilter = importTool(seedFixture('003-s2.2.2-core-fields-service-method.tool.json'));
const pythonRunner = importTool(seedFixture('003-s2.2.3-execute-python-script.tool.json'));
const qichacha = qichachaTool();
const all = [dataProcessor, imageFilter, pythonRunner, qichacha];
const names = (tools: { name: string }[]) => tools.map(({ name }) => name);

describe('listing tools by tag and namespace', () => {
  it('a tag keeps exactly the seed 003 tools carrying it', () => {
    expect(names(filterTools(all, { tag: 'python' }))).toEqual([
      'custom__my-data-processor',
      'core__execute-python-script',
    ]);
    expect(names(filterTools(all, { tag: 'image' }))).toEqual(['vendor__apply-image-filter']);
    expect(filterTools(all, { tag: 'Python' })).toEqual([]);
  });

  it('a namespace keeps the tools whose id starts with it and a colon', () => {
    expect(names(filterTools(all, { namespace: 'core' }))).toEqual(['core__execute-python-script']);
    expect(names(filterTools(all, { namespace: 'custom' }))).toEqual(['custom__my-data-processor']);
    expect(filterTools(all, { namespace: 'search_company_basic' })).toEqual([]);
  });

  it('tag and namespace together must both match; no criterion keeps every tool', () => {
    expect(names(filterTools(all, { tag: 'python', namespace: 'custom' }))).toEqual([
      'custom__my-data-processor',
    ]);
    expect(filterTools(all, { tag: 'image', namespace: 'core' })).toEqual([]);
    expect(filterTools(all, {})).toEqual(all);
  });

  it('a tool without a namespaced id has no namespace, even when its name contains "__"', () => {
    expect(toolNamespace(qichacha)).toBeUndefined();
    expect(toolNamespace({ ...qichacha, name: 'core__lookalike', origin: undefined })).toBeUndefined();
    expect(toolNamespace({ ...qichacha, origin: { format: 'native', id: 'core:recall_actions' } })).toBe(
      'core',
    );
  });
});
