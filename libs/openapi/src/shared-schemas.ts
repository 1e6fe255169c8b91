// Keeps functions small: a schema that occurs several times in one function (the same address object in
// billing and shipping, a line item in three lists) is emitted once under the root `$defs` and pointed at
// with `$ref`. Only exact copies are shared, and only those whose JSON is long enough that the `$ref`s
// cost less than the copies; each shared schema is named after the first property that holds it.

import type { FunctionParameters, JsonSchema } from './json-schema.js';

// Most schemas moved to `$defs` for one function; each pass re-measures what is left.
const MAX_SHARED = 64;

/**
 * Each schema object's text length, and for schemas long enough to be shared an id standing for their
 * text (hash-consing), both by identity. No text is built for a long schema: its length comes from its
 * children's, its id from its own keywords and its long children's ids (a short child, under
 * `minLength`, is written out: it is small). So a node costs about its own size once however deep it
 * sits, and a subtree a pass left unchanged keeps its measures for the next pass and the next function.
 */
export class SchemaMeasures {
  private readonly ids = new Map<string, number>();
  private readonly idOf = new WeakMap<JsonSchema, number>();
  private readonly lengthOf = new WeakMap<JsonSchema, number>();

  constructor(readonly minLength: number) {}

  /** Length of the schema's JSON text, as the sharing pass has always counted it. */
  length(schema: JsonSchema): number {
    const known = this.lengthOf.get(schema);
    if (known !== undefined) return known;
    let length = 2; // the braces
    let first = true;
    for (const [key, value] of Object.entries(schema)) {
      length += JSON.stringify(key).length + 1 + (first ? 0 : 1);
      first = false;
      if (key === 'properties' && value !== null && typeof value === 'object') {
        length += 2;
        let inner = true;
        for (const [property, child] of Object.entries(value as Record<string, JsonSchema>)) {
          length += JSON.stringify(property).length + 1 + this.length(child) + (inner ? 0 : 1);
          inner = false;
        }
      } else if (isSubSchemaKey(key, value)) {
        length += this.length(value as JsonSchema);
      } else if (key === 'anyOf' && Array.isArray(value)) {
        length += 2 + Math.max(0, value.length - 1);
        for (const branch of value as JsonSchema[]) length += this.length(branch);
      } else {
        // As a template literal writes it (`undefined` too), so lengths match the texts they stand for.
        length += `${JSON.stringify(value)}`.length;
      }
    }
    this.lengthOf.set(schema, length);
    return length;
  }

  /** Equal ids for equal texts; meant for schemas of at least `minLength`. */
  id(schema: JsonSchema): number {
    const known = this.idOf.get(schema);
    if (known !== undefined) return known;
    const child = (sub: JsonSchema): string =>
      this.length(sub) >= this.minLength ? `#${this.id(sub)}` : `T${JSON.stringify(sub)}`;
    let signature = '';
    for (const [key, value] of Object.entries(schema)) {
      const keyText = JSON.stringify(key);
      if (key === 'properties' && value !== null && typeof value === 'object') {
        signature += `${keyText}:P{`;
        for (const [property, sub] of Object.entries(value as Record<string, JsonSchema>)) {
          signature += `${JSON.stringify(property)}:${child(sub)},`;
        }
        signature += '}';
      } else if (isSubSchemaKey(key, value)) {
        signature += `${keyText}:S${child(value as JsonSchema)},`;
      } else if (key === 'anyOf' && Array.isArray(value)) {
        signature += `${keyText}:A[${(value as JsonSchema[]).map(child).join(',')}]`;
      } else {
        signature += `${keyText}:J${JSON.stringify(value)},`;
      }
    }
    let id = this.ids.get(signature);
    if (id === undefined) {
      id = this.ids.size;
      this.ids.set(signature, id);
    }
    this.idOf.set(schema, id);
    return id;
  }
}

function isSubSchemaKey(key: string, value: unknown): boolean {
  return key === 'items' || (key === 'additionalProperties' && typeof value === 'object' && value !== null);
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
  measures = new SchemaMeasures(minLength),
): FunctionParameters {
  let current = parameters;
  for (let shared = 0; shared < MAX_SHARED; shared++) {
    const best = pickRepeated(visitNodes(current, measures), measures, minLength, componentName);
    if (best === undefined) break;
    const name = freeName(best.component ?? best.name, current.$defs ?? {});
    const replace = (schema: JsonSchema): JsonSchema =>
      measures.length(schema) === best.length && measures.id(schema) === best.id
        ? { $ref: `#/$defs/${name}` }
        : mapChildren(schema, replace);
    const properties = mapValues(current.properties, replace);
    const defs = mapValues(current.$defs ?? {}, (schema) => mapChildren(schema, replace));
    // The first copy, with its own repeated parts shared as well (the others are the same text).
    defs[name] = mapChildren(best.schema, replace);
    current = { ...current, properties, $defs: defs };
  }
  return current;
}

/** Schema nodes long enough to share, in visiting order, with the property name that holds them (for naming). */
function visitNodes(
  parameters: FunctionParameters,
  measures: SchemaMeasures,
): Array<{ schema: JsonSchema; name: string }> {
  const nodes: Array<{ schema: JsonSchema; name: string }> = [];
  const visit = (schema: JsonSchema, name: string): void => {
    // Nothing shorter than `minLength` is shared, and nothing inside it is longer.
    if (measures.length(schema) < measures.minLength) return;
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
):
  | { id: number; schema: JsonSchema; name: string; length: number; component: string | undefined }
  | undefined {
  interface Seen {
    count: number;
    schema: JsonSchema;
    name: string;
    length: number;
    component: string | undefined;
  }
  const seen = new Map<number, Seen>();
  for (const { schema, name } of nodes) {
    if (schema.$ref !== undefined) continue;
    const length = measures.length(schema);
    if (length < minLength) continue;
    const id = measures.id(schema);
    const entry = seen.get(id);
    if (entry) {
      entry.count += 1;
      entry.component ??= componentName(schema);
    } else seen.set(id, { count: 1, schema, name, length, component: componentName(schema) });
  }
  let best: (Seen & { id: number; saving: number }) | undefined;
  for (const [id, entry] of seen) {
    if (entry.count < 2) continue;
    const saving = (entry.count - 1) * entry.length;
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
