import { importToolDefinition, toModelTool, type ToolDefinition } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { ToolCatalogue } from './tool-catalogue.js';
import { toolCataloguePrompt } from './tool-catalogue-prompt.js';

const imported = importToolDefinition({
  toolId: 'core:execute-python-script',
  displayName: 'Execute Python Script',
  description: 'Executes a Python script.',
  version: '1.0.0',
  handler: {
    type: 'service-method',
    serviceName: 'ExternalScriptExecutionService',
    methodName: 'executeScript',
  },
  parameters: {
    type: 'object',
    properties: { scriptPath: { type: 'string' }, inputData: { type: 'object' } },
    required: ['scriptPath'],
  },
});
if (!imported.success) throw new Error('the seed 003 fixture does not import');
const pythonTool = imported.tool;

function native(name: string, originId?: string): ToolDefinition {
  return {
    type: 'NATIVE',
    name,
    description: `does ${name}`,
    parameters: { type: 'object', properties: {} },
    class_name: name,
    ...(originId === undefined ? {} : { origin: { format: 'native', id: originId } }),
  };
}

describe('the tool catalogue of the ACTION protocol', () => {
  it('when a tool has a seed 003 toolId, that is its id; a tool without one is known by its name', () => {
    const tools = [pythonTool, native('clock')];
    const catalogue = new ToolCatalogue(tools.map(toModelTool), tools);
    expect(catalogue.tools.map(({ id, name }) => ({ id, name }))).toEqual([
      { id: 'core:execute-python-script', name: 'core__execute-python-script' },
      { id: 'clock', name: 'clock' },
    ]);
    expect(catalogue.resolve('core:execute-python-script')?.name).toBe('core__execute-python-script');
    expect(catalogue.resolve('core__execute-python-script')?.name).toBe('core__execute-python-script');
    expect(catalogue.resolve('core:nope')).toBeUndefined();
    expect(catalogue.idOf('core__execute-python-script')).toBe('core:execute-python-script');
    expect(catalogue.idOf('unknown_tool')).toBe('unknown_tool');
  });

  it("when a tool's source id no longer describes its name, the tool is known by its name", () => {
    const tools = [native('a__x', 'a:x'), native('renamed', 'a:y')];
    expect(new ToolCatalogue(tools.map(toModelTool), tools).tools.map((tool) => tool.id)).toEqual([
      'a:x',
      'renamed',
    ]);
  });

  it('when a tool is offered without a definition (added during the task), it is known by its name', () => {
    const catalogue = new ToolCatalogue([toModelTool(native('recall_actions'))]);
    expect(catalogue.tools.map((tool) => tool.id)).toEqual(['recall_actions']);
  });

  it('when tools are offered, the prompt shows the ACTION format and each tool with id, display name, description and schema', () => {
    const prompt = toolCataloguePrompt(new ToolCatalogue([toModelTool(pythonTool)], [pythonTool]));
    expect(prompt).toContain('<ACTION>\n  <tool_id>TOOL_ID</tool_id>');
    expect(prompt).toContain('<input name="PARAMETER_NAME"><![CDATA[VALUE]]></input>');
    expect(prompt).toContain(
      '## core:execute-python-script\nExecute Python Script: Executes a Python script.\nParameters (JSON Schema): {"type":"object","properties":{"scriptPath":{"type":"string"},"inputData":{"type":"object"}},"required":["scriptPath"]}',
    );
  });
});
