/**
 * The system-prompt section that replaces native function calling for models without it (seed 003 §3.1):
 * how to write an `<ACTION>`, how results come back as `<OBSERVATION>`, and every tool offered with its id,
 * description and parameters as JSON Schema.
 */
import type { ToolCatalogue } from './tool-catalogue.js';

const PROTOCOL = `# Tools

You can call tools. To call one, write an ACTION block in your reply, exactly in this form:

<ACTION>
  <tool_id>TOOL_ID</tool_id>
  <inputs>
    <input name="PARAMETER_NAME"><![CDATA[VALUE]]></input>
  </inputs>
</ACTION>

- TOOL_ID is one of the tool ids listed below.
- Write one <input> per parameter you pass, named as in the tool's parameters.
- Write a string value as it is. Write an object, array, number, boolean or null as JSON, for example {"limit": 10}, ["a", "b"], 30000 or true.
- Wrap every value in <![CDATA[ and ]]>. If a value contains ]]>, write it as ]]]]><![CDATA[> instead.
- Several ACTION blocks in one reply run in parallel.
- After your ACTION blocks, stop and wait. Each result comes back in an <OBSERVATION> block, one per ACTION, in the order of your ACTIONs: "Tool <id> executed successfully. Output: …" or "Tool <id> failed. Error type: …. Message: …".
- When you need no more tools, answer without any ACTION block. That answer is final.`;

export function toolCataloguePrompt(catalogue: ToolCatalogue): string {
  const tools = catalogue.tools.map((tool) =>
    [`## ${tool.id}`, tool.description, `Parameters (JSON Schema): ${JSON.stringify(tool.parameters)}`]
      .filter((line) => line !== '')
      .join('\n'),
  );
  return [PROTOCOL, '# Available tools', ...tools].join('\n\n');
}
