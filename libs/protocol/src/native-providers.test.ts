import { describe, expect, it } from 'vitest';
import { nativeClassesOf, SCRIPT_RUNNER_CLASS } from './native-providers.js';
import { ToolDefinition } from './tools/canonical.js';

const parameters = { type: 'object', properties: {} };
const nativeTool = (name: string, className: string) =>
  ToolDefinition.parse({ type: 'NATIVE', name, description: name, parameters, class_name: className });
const scriptTool = ToolDefinition.parse({
  type: 'SCRIPT',
  name: 'text__word-count',
  description: 'Counts words.',
  parameters,
  tool_id: 'text:word-count',
  display_name: 'Word count',
  version: '1.0.0',
  handler: { type: 'external-script', script_path: 'python/word_count.py', language: 'python' },
});
const httpTool = ToolDefinition.parse({
  type: 'HTTP',
  name: 'weather',
  description: 'Weather.',
  parameters,
  execution: { method: 'GET', url: 'https://api.example.com/weather' },
});

describe('nativeClassesOf', () => {
  it('names each NATIVE tool class once, sorted, and nothing for HTTP tools', () => {
    expect(
      nativeClassesOf([
        nativeTool('recall_actions', 'RecallActionsTool'),
        httpTool,
        nativeTool('deep_search', 'DeepSearchTool'),
        nativeTool('recall_again', 'RecallActionsTool'),
      ]),
    ).toEqual(['DeepSearchTool', 'RecallActionsTool']);
    expect(nativeClassesOf([httpTool])).toEqual([]);
  });

  it('a SCRIPT tool needs the script runner class, the one only executors with a scripts directory provide', () => {
    expect(nativeClassesOf([scriptTool, httpTool])).toEqual([SCRIPT_RUNNER_CLASS]);
    expect(SCRIPT_RUNNER_CLASS).toBe('ExecuteScriptTool');
  });
});
