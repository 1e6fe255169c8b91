// Keeps functions small: a schema that occurs several times in one function (the same address object in
// billing and shipping, a line item in three lists) is emitted once under the root `$defs` and pointed at
// with `$ref`. Only exact copies are shared, and only those whose JSON is long enough that the `$ref`s
// cost less than the copies; each shared schema is named after the first property that holds it.

import type { FunctionParameters, JsonSchema } from './json-schema.js';

// Most schemas moved to `$defs` for one function; each pass re-measures what is left.
const MAX_SHARED = 64;

/**
 * Every distinct schema text met while sharing, as a small id (hash-consing), and each schema object's id
 * and text length, by identity. A schema's text is never built: its id comes from its own keywords and its
 * children's ids, its length from theirs, so a node costs its own size once however deep it sits, and a
 * subtree left unchanged by a pass keeps its measure for the next.
 */
export class SchemaMeasures {
  private readonly ids = new Map<string, number>();
  private readonly lengths: number[] = [];
  private readonly byObject = new WeakMap<JsonSchema, number>();

  id(schema: JsonSchema): number {
    const known = this.byObject.get(schema);
    if (known !== undefined) return known;
    let signature = '';
    let length = 2; // the braces
    let first = true;
    for (const [key, value] of Object.entries(schema)) {
      const keyText = JSON.stringify(key);
      length += keyText.length + 1 + (first ? 0 : 1);
      first = false;
      if (key === 'properties' && value !== null && typeof value === 'object') {
        signature += `${keyText}:P{`;
        length += 2;
        let inner = true;
        for (const [property, child] of Object.entries(value as Record<string, JsonSchema>)) {
          const propertyText = JSON.stringify(property);
          const childId = this.id(child);
          signature += `${propertyText}:${childId},`;
          length += propertyText.length + 1 + this.lengths[childId]! + (inner ? 0 : 1);
          inner = false;
        }
        signature += '}';
      } else if (
        key === 'items' ||
        (key === 'additionalProperties' && typeof value === 'object' && value !== null)
      ) {
        const childId = this.id(value as JsonSchema);
        signature += `${keyText}:S${childId},`;
        length += this.lengths[childId]!;
      } else if (key === 'anyOf' && Array.isArray(value)) {
        signature += `${keyText}:A[`;
        length += 2 + Math.max(0, value.length - 1);
        for (const branch of value as JsonSchema[]) {
          const childId = this.id(branch);
          signature += `${childId},`;
          length += this.lengths[childId]!;
        }
        signature += ']';
      } else {
        // As a template literal writes it (`undefined` too), so measures match the texts they stand for.
        const written = `${JSON.stringify(value)}`;
        signature += `${keyText}:J${written},`;
        length += written.length;
      }
    }
    let id = this.ids.get(signature);
    if (id === undefined) {
      id = this.lengths.length;
      this.ids.set(signature, id);
      this.lengths.push(length);
    }
    this.byObject.set(schema, id);
    return id;
  }

  length(id: number): number {
    return this.lengths[id]!;
  }
}

/**
 * `componentName` tells which component a schema is (`Pet` for `#/components/schemas/Pet`), if it is one:
 * a shared schema is named after it, else after the first property holding it; a name already taken in
 * the function gets `_2`, `_3`, ... in the order schemas are shared, so names are deterministic.
 */
export function shareRepeatedSchemas(
  parameters: FunctionParameters,
  minLength: number,
  componentName: (schema: JsonSchema) => string | undefined = () => undefined,
  measures = new SchemaMeasures(),
): FunctionParameters {
  let current = parameters;
  for (let shared = 0; shared < MAX_SHARED; shared++) {
    const best = pickRepeated(visitNodes(current), measures, minLength, componentName);
    if (best === undefined) break;
    const name = freeName(best.component ?? best.name, current.$defs ?? {});
    const replace = (schema: JsonSchema): JsonSchema =>
      measures.id(schema) === best.id ? { $ref: `#/$defs/${name}` } : mapChildren(schema, replace);
    const properties = mapValues(current.properties, replace);
    const defs = mapValues(current.$defs ?? {}, (schema) => mapChildren(schema, replace));
    // The first copy, with its own repeated parts shared as well (the others are the same text).
    defs[name] = mapChildren(best.schema, replace);
    current = { ...current, properties, $defs: defs };
  }
  return current;
}

/** Schema nodes in visiting order, with the property name that holds them (for naming). */
function visitNodes(parameters: FunctionParameters): Array<{ schema: JsonSchema; name: string }> {
  const nodes: Array<{ schema: JsonSchema; name: string }> = [];
  const visit = (schema: JsonSchema, name: string): void => {
    nodes.push({ schema, name });
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'properties' && value !== null && typeof value === 'object') {
        for (const [property, child] of Object.entries(value as Record<string, JsonSchema>))
          visit(child, property);
      } else if (
        key === 'items' ||
        (key === 'additionalProperties' && typeof value === 'object' && value !== null)
      ) {
        visit(value as JsonSchema, key === 'items' ? `${name}_item` : `${name}_value`);
      } else if (key === 'anyOf' && Array.isArray(value)) {
        (value as JsonSchema[]).forEach((branch, i) => visit(branch, `${name}_${i + 1}`));
      }
    }
  };
  for (const [key, schema] of Object.entries(parameters.properties)) visit(schema, key);
  for (const [key, schema] of Object.entries(parameters.$defs ?? {})) {
    // A `$defs` entry itself is shared already; only what is inside it can be.
    mapChildren(schema, (child) => {
      visit(child, key);
      return child;
    });
  }
  return nodes;
}

/** The repeated schema that saves the most characters, if any saves enough. */
function pickRepeated(
  nodes: ReadonlyArray<{ schema: JsonSchema; name: string }>,
  measures: SchemaMeasures,
  minLength: number,
  componentName: (schema: JsonSchema) => string | undefined,
): { id: number; schema: JsonSchema; name: string; component: string | undefined } | undefined {
  interface Seen {
    count: number;
    schema: JsonSchema;
    name: string;
    component: string | undefined;
  }
  const seen = new Map<number, Seen>();
  for (const { schema, name } of nodes) {
    if (schema.$ref !== undefined) continue;
    const id = measures.id(schema);
    if (measures.length(id) < minLength) continue;
    const entry = seen.get(id);
    if (entry) {
      entry.count += 1;
      entry.component ??= componentName(schema);
    } else seen.set(id, { count: 1, schema, name, component: componentName(schema) });
  }
  let best: (Seen & { id: number; saving: number }) | undefined;
  for (const [id, entry] of seen) {
    if (entry.count < 2) continue;
    const saving = (entry.count - 1) * measures.length(id);
    if (best === undefined || saving > best.saving) best = { ...entry, id, saving };
  }
  return best;
}

function mapValues(
  record: Record<string, JsonSchema>,
  map: (schema: JsonSchema) => JsonSchema,
): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [key, value] of Object.entries(record)) out[key] = map(value);
  return out;
}

/**
 * `schema` with each direct sub-schema passed through `map`: the same object when none changed (so its
 * measure is kept), else a copy.
 */
function mapChildren(schema: JsonSchema, map: (child: JsonSchema) => JsonSchema): JsonSchema {
  let out: JsonSchema | undefined;
  const copy = (): JsonSchema => (out ??= { ...schema });
  if (schema.properties) {
    let changed = false;
    const properties: Record<string, JsonSchema> = {};
    for (const [key, child] of Object.entries(schema.properties)) {
      const mapped = map(child);
      if (mapped !== child) changed = true;
      properties[key] = mapped;
    }
    if (changed) copy().properties = properties;
  }
  if (schema.items) {
    const mapped = map(schema.items);
    if (mapped !== schema.items) copy().items = mapped;
  }
  if (typeof schema.additionalProperties === 'object') {
    const mapped = map(schema.additionalProperties);
    if (mapped !== schema.additionalProperties) copy().additionalProperties = mapped;
  }
  if (schema.anyOf) {
    const mapped = schema.anyOf.map(map);
    if (mapped.some((branch, i) => branch !== schema.anyOf![i])) copy().anyOf = mapped;
  }
  return out ?? schema;
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
