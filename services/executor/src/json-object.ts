/** The executor's one test for a JSON object (not null, not an array), for what models and tools send back. */
import type { JsonObject } from '@agentmesh/protocol';

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
