/**
 * JSON with object keys in sorted order, so that equal values give equal text whatever order their keys
 * came in: `{"a":1,"b":2}` and `{"b":2,"a":1}` make one cache key and one action id.
 */

export function stableJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort())
    sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}
