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
  private readonly bytesOf = new WeakMap<JsonSchema, number>();

  constructor(readonly minLength: number) {}

  /** Length of the schema's JSON text, as the sharing pass has always counted it. */
  length(schema: JsonSchema): number {
    const known = this.lengthOf.get(schema);
    if (known !== undefined) return known;
    let length: number;
    if (isLeaf(schema)) {
      // Nothing below to measure apart: the text itself, in one native call.
      length = JSON.stringify(schema).length;
    } else {
      length = 2; // the braces
      let first = true;
      for (const key in schema) {
        const value = (schema as Record<string, unknown>)[key];
        length += JSON.stringify(key).length + 1 + (first ? 0 : 1);
        first = false;
        if (key === 'properties' && value !== null && typeof value === 'object') {
          length += 2;
          let inner = true;
          const properties = value as Record<string, JsonSchema>;
          for (const property in properties) {
            length +=
              JSON.stringify(property).length + 1 + this.length(properties[property]!) + (inner ? 0 : 1);
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
    }
    this.lengthOf.set(schema, length);
    return length;
  }

  /**
   * UTF-8 bytes of `JSON.stringify(schema)`, exactly (a key whose value is `undefined` is left out, as
   * there), from the children's bytes: the size budget weighs a function without serialising it again
   * after each edit.
   */
  bytes(schema: JsonSchema): number {
    if (schema === null || typeof schema !== 'object') return Buffer.byteLength(JSON.stringify(schema));
    const known = this.bytesOf.get(schema);
    if (known !== undefined) return known;
    let bytes: number;
    if (isLeaf(schema)) {
      bytes = Buffer.byteLength(JSON.stringify(schema));
    } else {
      bytes = 2;
      let first = true;
      for (const key in schema) {
        const value = (schema as Record<string, unknown>)[key];
        if (value === undefined) continue;
        bytes += Buffer.byteLength(JSON.stringify(key)) + 1 + (first ? 0 : 1);
        first = false;
        if ((key === 'properties' || key === '$defs') && value !== null && typeof value === 'object') {
          bytes += this.recordBytes(value as Record<string, JsonSchema>);
        } else if (isSubSchemaKey(key, value)) {
          bytes += this.bytes(value as JsonSchema);
        } else if (key === 'anyOf' && Array.isArray(value)) {
          bytes += 2 + Math.max(0, value.length - 1);
          for (const branch of value as JsonSchema[]) bytes += this.bytes(branch);
        } else {
          bytes += Buffer.byteLength(JSON.stringify(value));
        }
      }
    }
    this.bytesOf.set(schema, bytes);
    return bytes;
  }

  /** UTF-8 bytes of `JSON.stringify(record)` for a record of schemas (`properties`, `$defs`). */
  recordBytes(record: Record<string, JsonSchema>): number {
    let bytes = 2;
    let first = true;
    for (const name in record) {
      const schema = record[name];
      if (schema === undefined) continue;
      bytes += Buffer.byteLength(JSON.stringify(name)) + 1 + this.bytes(schema) + (first ? 0 : 1);
      first = false;
    }
    return bytes;
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

/**
 * True when no keyword of the schema holds sub-schemas (nor `$defs`) and none is `undefined`: its JSON text is
 * measured whole.
 */
function isLeaf(schema: JsonSchema): boolean {
  for (const key in schema) {
    const value = (schema as Record<string, unknown>)[key];
    if (value === undefined || key === 'items') return false;
    if (value === null || typeof value !== 'object') continue;
    if (key === 'properties' || key === 'additionalProperties' || key === '$defs') return false;
    if (key === 'anyOf' && Array.isArray(value)) return false;
  }
  return true;
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
    // A copy sits only in a schema longer than it: shorter ones are left as they are, unvisited.
    const replace = (schema: JsonSchema): JsonSchema => {
      const length = measures.length(schema);
      if (length < best.length) return schema;
      if (length === best.length && measures.id(schema) === best.id) return { $ref: `#/$defs/${name}` };
      return mapChildren(schema, replace);
    };
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

/**
 * The repeated schema that saves the most characters, if any saves enough. Equal texts have equal
 * lengths, so ids (which cost a signature each) are only computed for nodes whose length occurs twice,
 * and the component name only for the winner: most functions repeat nothing and get neither.
 */
function pickRepeated(
  nodes: ReadonlyArray<{ schema: JsonSchema; name: string }>,
  measures: SchemaMeasures,
  minLength: number,
  componentName: (schema: JsonSchema) => string | undefined,
):
  | { id: number; schema: JsonSchema; name: string; length: number; component: string | undefined }
  | undefined {
  const lengths = new Map<number, number>();
  let candidates = 0;
  for (const { schema } of nodes) {
    if (schema.$ref !== undefined) continue;
    const length = measures.length(schema);
    if (length < minLength) continue;
    const count = (lengths.get(length) ?? 0) + 1;
    lengths.set(length, count);
    if (count === 2) candidates += 1;
  }
  if (candidates === 0) return undefined;
  interface Seen {
    count: number;
    schema: JsonSchema;
    name: string;
    length: number;
  }
  const seen = new Map<number, Seen>();
  for (const { schema, name } of nodes) {
    if (schema.$ref !== undefined) continue;
    const length = measures.length(schema);
    if (length < minLength || lengths.get(length)! < 2) continue;
    const id = measures.id(schema);
    const entry = seen.get(id);
    if (entry) entry.count += 1;
    else seen.set(id, { count: 1, schema, name, length });
  }
  let best: (Seen & { id: number; saving: number }) | undefined;
  for (const [id, entry] of seen) {
    if (entry.count < 2) continue;
    const saving = (entry.count - 1) * entry.length;
    if (best === undefined || saving > best.saving) best = { ...entry, id, saving };
  }
  if (best === undefined) return undefined;
  // Named after the first of its copies, in visiting order, that is a component.
  let component: string | undefined;
  for (const { schema } of nodes) {
    if (component !== undefined) break;
    if (schema.$ref !== undefined || measures.length(schema) !== best.length) continue;
    if (measures.id(schema) === best.id) component = componentName(schema);
  }
  return { id: best.id, schema: best.schema, name: best.name, length: best.length, component };
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
  const referenced = (value: unknown): string[] => {
    const names: string[] = [];
    collectDefRefs(value, names);
    return names;
  };
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

const DEFS_PREFIX = '#/$defs/';

/**
 * Every `"$ref": "#/$defs/<name>"` in `value`, anywhere (as a text search of its JSON would find them),
 * in document order, without serialising it.
 */
function collectDefRefs(value: unknown, names: string[]): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const item of value) collectDefRefs(item, names);
    return;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const child = record[key];
    if (key === '$ref' && typeof child === 'string' && child.startsWith(DEFS_PREFIX)) {
      names.push(child.slice(DEFS_PREFIX.length));
    } else collectDefRefs(child, names);
  }
}

function freeName(wanted: string, taken: Record<string, unknown>): string {
  const base = wanted.replace(/[^A-Za-z0-9_.-]+/g, '_') || 'Schema';
  let name = base;
  for (let n = 2; Object.hasOwn(taken, name); n++) name = `${base}_${n}`;
  return name;
}
