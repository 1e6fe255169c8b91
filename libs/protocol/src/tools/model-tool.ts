// What the model is told about a tool: name, description and argument schema. Execution and auth details never
// reach the model (seed 000 §4.3: "execution and auth_config are hidden").
import type { ModelTool } from '../chat.js';
import type { ToolDefinition } from './canonical.js';

export function toModelTool(tool: ToolDefinition): ModelTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}
