/**
 * Ids that go into upstream URL paths (`kn_id`, `at_id`, `box_id`, `tool_id`), each as one percent-encoded
 * segment. `.` and `..` cannot be one: a URL parser or a normalising server removes them, climbing a level
 * for `..`, and reads `%2E` as a dot too, so encoding cannot carry them (see @agentmesh/openapi's
 * `isDotSegment`). Such ids are refused where they come in: the request's ids by `parseRecallRequest`,
 * the action source's by the recall.
 */
import { isDotSegment } from '@agentmesh/openapi';

/** True when `id`, as a path segment, would be `.` or `..` (also spelled `%2e`, or `%252e`). */
export function isDotSegmentId(id: string): boolean {
  return isDotSegment(encodeURIComponent(id));
}

/** `id` percent-encoded as one path segment; an id that was not refused on the way in is a bug here. */
export function pathSegment(id: string): string {
  if (isDotSegmentId(id))
    throw new Error(`refusing to build an upstream path with the dot segment ${JSON.stringify(id)}`);
  return encodeURIComponent(id);
}
