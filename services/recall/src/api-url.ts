/**
 * Seed 004 §4.2: the URL that executes a dynamic tool, from the configured template with `{box_id}` and
 * `{tool_id}` filled from the action source. The ids are percent-encoded, so an id cannot add path
 * segments or a query to the URL; a `.`/`..` id, which no encoding keeps in place, was refused before.
 */
import { pathSegment } from './upstream/path-segment.js';

export function apiUrlFor(template: string, tool: { boxId: string; toolId: string }): string {
  return template
    .replaceAll('{box_id}', pathSegment(tool.boxId))
    .replaceAll('{tool_id}', pathSegment(tool.toolId));
}
