// Small helpers for reading untyped JSON/YAML documents safely: OpenAPI input is never trusted to have
// the shape the specification promises.

import { isJsonObject, type JsonObject } from '@agentmesh/protocol';

export { isJsonObject };
export type { JsonObject };

export function asObject(value: unknown): JsonObject | undefined {
  return isJsonObject(value) ? value : undefined;
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function asNonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

export function asFiniteNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function asNonNegativeInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

export function isPrimitive(value: unknown): value is string | number | boolean | null {
  const type = typeof value;
  return value === null || type === 'string' || type === 'number' || type === 'boolean';
}

/** Order-independent equality of two JSON values (used to deduplicate enum values). */
export function jsonKey(value: unknown): string {
  // Enum values are mostly primitives, whose text needs no sorted copy.
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  return JSON.stringify(value, (_key, v: unknown) =>
    isJsonObject(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}

export function uniqueJsonValues(values: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const value of values) {
    const key = jsonKey(value);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(value);
    }
  }
  return out;
}
