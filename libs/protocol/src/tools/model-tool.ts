// What the model is told about a tool: name, description and argument schema. Execution and auth details never
// reach the model (seed 000 §4.3: "execution and auth_config are hidden"). A seed 003 tool's display name
// and examples are part of what helps a model use it (seed 003 §2.2.2), so they join its description; the
// XML catalogue is built from the same description, so both protocols tell the model the same.
import type { ModelTool } from '../chat.js';
import type { ToolDefinition } from './canonical.js';

export function toModelTool(tool: ToolDefinition): ModelTool {
  return {
    type: 'function',
    function: { name: tool.name, description: modelDescription(tool), parameters: tool.parameters },
  };
}

function modelDescription(tool: ToolDefinition): string {
  if (tool.type !== 'SCRIPT') return tool.description;
  const lines: string[] = [];
  const title = tool.display_name.trim();
  // The display name says little when it only repeats the description's start.
  if (title !== '' && !tool.description.startsWith(title)) lines.push(`${title}: ${tool.description}`);
  else lines.push(tool.description);
  const examples = tool.examples ?? [];
  if (examples.length > 0) {
    lines.push('', 'Examples:');
    for (const example of examples) {
      const call = `arguments ${JSON.stringify(example.input)}`;
      const result =
        example.expected_output === undefined ? '' : ` → ${JSON.stringify(example.expected_output)}`;
      lines.push(`- ${example.description ? `${example.description} ` : ''}${call}${result}`);
    }
  }
  return lines.join('\n');
}
