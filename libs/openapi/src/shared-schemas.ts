// Keeps functions small: a schema that occurs several times in one function (the same address object in
// billing and shipping, a line item in three lists) is emitted once under the root `$defs` and pointed at
// with `$ref`. Only exact copies are shared, and only those whose JSON is long enough that the `$ref`s
// cost less than the copies; each shared schema is named after the first property that holds it.

import type { FunctionParameters, JsonSchema } from './json-schema.js';

// Most schemas moved to `$defs` for one function; each pass re-measures what is left.
const MAX_SHARED = 64;

export function shareRepeatedSchemas(parameters: FunctionParameters, minLength: number): FunctionParameters {
  let current = parameters;
  for (let shared = 0; shared < MAX_SHARED; shared++) {
    const measured = measure(current);
    const best = pickRepeated(measured, minLength);
    if (best === undefined) break;
    const name = freeName(best.name, current.$defs ?? {});
    const replace = (schema: JsonSchema): JsonSchema =>
      measured.text.get(schema) === best.text ? { $ref: `#/$defs/${name}` } : mapChildren(schema, replace);
    const properties = Object.fromEntries(
      Object.entries(current.properties).map(([key, schema]) => [key, replace(schema)]),
    );
    const defs = Object.fromEntries(
      Object.entries(current.$defs ?? {}).map(([key, schema]) => [key, mapChildren(schema, replace)]),
    );
    // The first copy, with its own repeated parts shared as well (the others are the same text).
    defs[name] = mapChildren(best.schema, replace);
    current = { ...current, properties, $defs: defs };
  }
  return current;
}

interface Measured {
  /** Each schema node's JSON text (as JSON.stringify writes it). */
  readonly text: Map<JsonSchema, string>;
  /** Node texts in visiting order, with the property name that holds them (for naming). */
  readonly nodes: Array<{ schema: JsonSchema; name: string }>;
}

/** JSON texts of every schema node, built bottom-up so each node costs its own size once. */
function measure(parameters: FunctionParameters): Measured {
  const text = new Map<JsonSchema, string>();
  const nodes: Measured['nodes'] = [];
  const visit = (schema: JsonSchema, name: string): string => {
    nodes.push({ schema, name });
    const parts = Object.entries(schema).map(([key, value]) => {
      let written: string;
      if (key === 'properties' && value !== null && typeof value === 'object') {
        const inner = Object.entries(value as Record<string, JsonSchema>).map(
          ([property, child]) => `${JSON.stringify(property)}:${visit(child, property)}`,
        );
        written = `{${inner.join(',')}}`;
      } else if (key === 'items' || (key === 'additionalProperties' && typeof value === 'object')) {
        written = visit(value as JsonSchema, key === 'items' ? `${name}_item` : `${name}_value`);
      } else if (key === 'anyOf' && Array.isArray(value)) {
        written = `[${(value as JsonSchema[]).map((branch, i) => visit(branch, `${name}_${i + 1}`)).join(',')}]`;
      } else {
        written = JSON.stringify(value);
      }
      return `${JSON.stringify(key)}:${written}`;
    });
    const own = `{${parts.join(',')}}`;
    text.set(schema, own);
    return own;
  };
  for (const [key, schema] of Object.entries(parameters.properties)) visit(schema, key);
  for (const [key, schema] of Object.entries(parameters.$defs ?? {})) {
    // A `$defs` entry itself is shared already; only what is inside it can be.
    mapChildren(schema, (child) => {
      visit(child, key);
      return child;
    });
  }
  return { text, nodes };
}

/** The repeated text that saves the most characters, if any saves enough. */
function pickRepeated(
  measured: Measured,
  minLength: number,
): { text: string; schema: JsonSchema; name: string } | undefined {
  const seen = new Map<string, { count: number; schema: JsonSchema; name: string }>();
  for (const { schema, name } of measured.nodes) {
    if (schema.$ref !== undefined) continue;
    const text = measured.text.get(schema)!;
    if (text.length < minLength) continue;
    const entry = seen.get(text);
    if (entry) entry.count += 1;
    else seen.set(text, { count: 1, schema, name });
  }
  let best: { text: string; schema: JsonSchema; name: string; saving: number } | undefined;
  for (const [text, { count, schema, name }] of seen) {
    if (count < 2) continue;
    const saving = (count - 1) * text.length;
    if (best === undefined || saving > best.saving) best = { text, schema, name, saving };
  }
  return best;
}

/** A copy of `schema` with each direct sub-schema passed through `map`. */
function mapChildren(schema: JsonSchema, map: (child: JsonSchema) => JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([key, child]) => [key, map(child)]),
    );
  }
  if (schema.items) out.items = map(schema.items);
  if (typeof schema.additionalProperties === 'object') {
    out.additionalProperties = map(schema.additionalProperties);
  }
  if (schema.anyOf) out.anyOf = schema.anyOf.map(map);
  return out;
}

/**
 * Without the `$defs` entries nothing reaches from the properties (a recursive type given inline as an
 * argument whose self-reference was a readOnly property, and so dropped from the request).
 */
export function withoutUnusedDefs(parameters: FunctionParameters): FunctionParameters {
  const defs = parameters.$defs;
  if (defs === undefined) return parameters;
  const referenced = (value: unknown): string[] =>
    [...JSON.stringify(value).matchAll(/"\$ref":"#\/\$defs\/((?:[^"\\]|\\.)*)"/g)].map(
      (match) => JSON.parse(`"${match[1]!}"`) as string,
    );
  const reached = new Set<string>();
  const pending = referenced(parameters.properties);
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (reached.has(name) || defs[name] === undefined) continue;
    reached.add(name);
    pending.push(...referenced(defs[name]));
  }
  const { $defs: _all, ...rest } = parameters;
  if (reached.size === 0) return rest;
  return { ...rest, $defs: Object.fromEntries(Object.entries(defs).filter(([name]) => reached.has(name))) };
}

function freeName(wanted: string, taken: Record<string, unknown>): string {
  const base = wanted.replace(/[^A-Za-z0-9_.-]+/g, '_') || 'Schema';
  let name = base;
  for (let n = 2; Object.hasOwn(taken, name); n++) name = `${base}_${n}`;
  return name;
}
