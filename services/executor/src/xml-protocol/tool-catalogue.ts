/**
 * The tools of one model call as the `<ACTION>` protocol names them. A tool's id is the id it has in its
 * source format when that is known (seed 003's `core:execute-python-script`, kept in `tool_id` and
 * `origin.id`), else its function name. The catalogue maps both ways: an id (or the function name, which
 * models also use) to the function name the loop knows, and a function name back to the id the model sees.
 */
import { toFunctionName, type ModelTool, type ToolDefinition } from '@agentmesh/protocol';

export interface CatalogueTool {
  /** What the model writes in `<tool_id>`. */
  readonly id: string;
  /** The function name the loop and the events use. */
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

export class ToolCatalogue {
  readonly tools: readonly CatalogueTool[];
  readonly #byName: ReadonlyMap<string, CatalogueTool>;
  readonly #byId: ReadonlyMap<string, CatalogueTool>;

  /**
   * @param modelTools what this model call offers (the request's `tools`)
   * @param definitions the task's tool definitions, consulted only for their source ids; a tool offered
   *   without a definition is known by its function name
   */
  constructor(modelTools: readonly ModelTool[], definitions: readonly ToolDefinition[] = []) {
    const sourceIds = new Map(definitions.map((tool) => [tool.name, sourceIdOf(tool)]));
    // Ids are unique: an id other than the name is never a legal function name (so never another tool's
    // name), and it maps to exactly one name through toFunctionName.
    const tools = modelTools.map(({ function: tool }): CatalogueTool => ({
      id: sourceIds.get(tool.name) ?? tool.name,
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
    }));
    this.tools = tools;
    this.#byName = new Map(tools.map((tool) => [tool.name, tool]));
    this.#byId = new Map(tools.map((tool) => [tool.id, tool]));
  }

  /** The tool a `<tool_id>` names: by its id, else by its function name. */
  resolve(toolId: string): CatalogueTool | undefined {
    return this.#byId.get(toolId) ?? this.#byName.get(toolId);
  }

  byName(name: string): CatalogueTool | undefined {
    return this.#byName.get(name);
  }

  /** The id the model sees for a function name; a name no tool has is its own id. */
  idOf(name: string): string {
    return this.#byName.get(name)?.id ?? name;
  }
}

/** A tool's id in its source format, as long as it still describes the tool's current name. */
function sourceIdOf(tool: ToolDefinition): string {
  const id = tool.type === 'SCRIPT' ? tool.tool_id : tool.origin?.id;
  return id !== undefined && toFunctionName(id) === tool.name ? id : tool.name;
}
