/**
 * Listing the registry by seed 003's `tags` and by namespace (the part of a tool id before `:`, as in
 * `core:execute-python-script`). Pure, over canonical definitions, so the management API can list the
 * live catalogue the same way.
 */
import type { ToolDefinition } from './canonical.js';

export interface ToolFilter {
  /** Keeps tools carrying this tag (exact, case-sensitive). */
  tag?: string | undefined;
  /** Keeps tools whose id is `<namespace>:...` (exact, case-sensitive). */
  namespace?: string | undefined;
}

/** Tools matching every given criterion, in their original order; no criterion keeps them all. */
export function filterTools(tools: readonly ToolDefinition[], filter: ToolFilter): ToolDefinition[] {
  return tools.filter(
    (tool) =>
      (filter.tag === undefined || toolTags(tool).includes(filter.tag)) &&
      (filter.namespace === undefined || toolNamespace(tool) === filter.namespace),
  );
}

/** Seed 003 tools carry tags; the other formats have none. */
export function toolTags(tool: ToolDefinition): readonly string[] {
  return tool.type === 'SCRIPT' ? (tool.tags ?? []) : [];
}

/**
 * The namespace of the tool's own id: seed 003's `toolId`, else the id it had in its source format
 * (`origin.id`, e.g. a native tool's `core:...`). Undefined when that id has no `:` — the canonical
 * `name` is not parsed, because its `__` may be part of an ordinary name.
 */
export function toolNamespace(tool: ToolDefinition): string | undefined {
  const id = tool.type === 'SCRIPT' ? tool.tool_id : tool.origin?.id;
  const colon = id?.indexOf(':') ?? -1;
  return id !== undefined && colon > 0 ? id.slice(0, colon) : undefined;
}
