// The OpenAI structured-outputs ("strict") variant of a converted function: every object closed with
// `additionalProperties: false`, every property required (optional ones made nullable, and recorded so
// the request builder treats their `null` as "absent"), and only the keywords strict mode accepts.

import type { NullAsAbsent } from './conversion.js';
import {
  allowsNull,
  isObjectSchema,
  makeNullable,
  typesOf,
  type FunctionParameters,
  type JsonSchema,
} from './json-schema.js';
import { NoteCode, type NoteCollector } from './notes.js';
import { joinSentences } from './text.js';

const KEPT_KEYWORDS = new Set([
  'type',
  'description',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  'enum',
  'const',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);
const STRICT_FORMATS = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
]);
const DEFS_PREFIX = '#/$defs/';
const ANY_VALUE: JsonSchema = { type: ['string', 'number', 'boolean', 'null'] };
// OpenAI's documented limits for one strict schema.
const MAX_PROPERTIES = 5000;
const MAX_ENUM_VALUES = 1000;

export interface StrictResult {
  readonly parameters: FunctionParameters;
  readonly nullAsAbsent: NullAsAbsent | undefined;
}

export function toStrictParameters(parameters: FunctionParameters, notes: NoteCollector): StrictResult {
  const tree: NullAsAbsent = {};
  const counts = { properties: 0, enumValues: 0 };
  const defTrees: Record<string, NullAsAbsent> = {};
  const defs = Object.entries(parameters.$defs ?? {}).map(([name, schema]): [string, JsonSchema] => {
    const defTree: NullAsAbsent = {};
    defTrees[name] = defTree;
    return [name, strictSchema(schema, defTree, notes, counts)];
  });
  const converted = strictSchema(parameters, tree, notes, counts);
  const usedTrees = dropIdleDefReferences(tree, defTrees);
  if (counts.properties > MAX_PROPERTIES) {
    notes.add(
      NoteCode.STRICT_ADJUSTED,
      `${counts.properties} properties exceed strict mode's ${MAX_PROPERTIES}`,
    );
  }
  if (counts.enumValues > MAX_ENUM_VALUES) {
    notes.add(
      NoteCode.STRICT_ADJUSTED,
      `${counts.enumValues} enum values exceed strict mode's ${MAX_ENUM_VALUES}`,
    );
  }
  return {
    parameters: {
      type: 'object',
      properties: converted.properties ?? {},
      required: converted.required ?? [],
      additionalProperties: false,
      ...(defs.length > 0 ? { $defs: Object.fromEntries(defs) } : {}),
    },
    nullAsAbsent: isEmptyTree(tree) ? undefined : usedTrees ? { ...tree, defs: usedTrees } : tree,
  };
}

function strictSchema(
  schema: JsonSchema,
  tree: NullAsAbsent,
  notes: NoteCollector,
  counts: { properties: number; enumValues: number },
): JsonSchema {
  if (schema.$ref !== undefined) {
    // What null means below a `$ref` is the `$defs` entry's tree.
    tree.def = schema.$ref.slice(DEFS_PREFIX.length);
    return { $ref: schema.$ref };
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) if (KEPT_KEYWORDS.has(key)) out[key] = value;
  let result = out as JsonSchema;
  if (schema.default !== undefined) {
    result.description = joinSentences(result.description, `Default: ${JSON.stringify(schema.default)}.`);
  }
  if (result.format !== undefined && !STRICT_FORMATS.has(result.format)) delete result.format;
  if (result.enum) counts.enumValues += result.enum.length;

  if (result.anyOf) {
    if (wrapsUnion(schema)) {
      notes.add(
        NoteCode.STRICT_ADJUSTED,
        "an object's own properties were moved into each branch of its anyOf, so every object can be closed",
      );
      return strictSchema(distributeIntoBranches(schema), tree, notes, counts);
    }
    result.anyOf = result.anyOf.map((branch) => strictSchema(branch, tree, notes, counts));
    return result;
  }
  if (isObjectSchema(result) || (typesOf(result).length === 0 && result.additionalProperties !== undefined)) {
    const wasMap = typeof schema.additionalProperties === 'object' || schema.additionalProperties === true;
    if (wasMap && !schema.properties) {
      notes.add(
        NoteCode.STRICT_ADJUSTED,
        'a free-form map cannot be expressed in strict mode and accepts only {}',
      );
    }
    const required = new Set(schema.required ?? []);
    const properties: Record<string, JsonSchema> = {};
    for (const [name, child] of Object.entries(schema.properties ?? {})) {
      counts.properties += 1;
      tree.properties ??= {};
      const childTree = (tree.properties[name] ??= {});
      let converted = strictSchema(child, childTree, notes, counts);
      // An optional property the API declares nullable keeps null as a value the API understands;
      // for any other optional property, null is how the model says "not given".
      if (!required.has(name)) {
        if (!allowsNull(converted)) converted = makeNullable(converted);
        if (!explicitlyNullable(child)) childTree.absentIfNull = true;
      }
      if (isEmptyTree(childTree)) delete tree.properties[name];
      properties[name] = converted;
    }
    if (tree.properties && Object.keys(tree.properties).length === 0) delete tree.properties;
    result = { ...result, properties, required: Object.keys(properties), additionalProperties: false };
    if (typesOf(result).length === 0) result.type = 'object';
    return result;
  }
  if (typesOf(result).includes('array')) {
    const itemsTree = (tree.items ??= {});
    result.items = schema.items ? strictSchema(schema.items, itemsTree, notes, counts) : ANY_VALUE;
    if (isEmptyTree(itemsTree)) delete tree.items;
    return result;
  }
  if (typesOf(result).length === 0 && result.enum === undefined && result.const === undefined) {
    notes.add(
      NoteCode.STRICT_ADJUSTED,
      'a value of any type is limited to a string, number, boolean or null',
    );
    return { ...result, ...ANY_VALUE };
  }
  return result;
}

/**
 * An object that carries properties (or `type: object`) beside an `anyOf`, as `allOf` + `oneOf` merges
 * give. Strict mode closes every object, and a closed wrapper would refuse the branches' properties.
 */
function wrapsUnion(schema: JsonSchema): boolean {
  const { anyOf: _anyOf, ...wrapper } = schema;
  return (
    isObjectSchema(wrapper) || wrapper.additionalProperties !== undefined || wrapper.required !== undefined
  );
}

/**
 * `{props P, anyOf [B1, B2]}` as `{anyOf [P∪B1, P∪B2]}`: the same values, each branch one object. A branch
 * that is not an object (the `null` of a nullable union) stays as it is.
 */
function distributeIntoBranches(schema: JsonSchema): JsonSchema {
  const { anyOf = [], description, ...wrapper } = schema;
  const branches = anyOf.map((branch): JsonSchema => {
    const branchTypes = typesOf(branch);
    if (branchTypes.length > 0 && !branchTypes.includes('object')) return branch;
    if (branch.$ref !== undefined) return branch;
    if (branch.anyOf) return distributeIntoBranches({ ...wrapper, ...branch });
    const required = [...new Set([...(wrapper.required ?? []), ...(branch.required ?? [])])];
    const merged: JsonSchema = {
      ...wrapper,
      ...branch,
      type: 'object' as const,
      properties: { ...wrapper.properties, ...branch.properties },
    };
    if (required.length > 0) merged.required = required;
    else delete merged.required;
    return merged;
  });
  // A nullable wrapper (`type: [object, null]`) keeps null as one more branch.
  if (typesOf(wrapper).includes('null') && !branches.some(allowsNull)) branches.push({ type: 'null' });
  return description === undefined ? { anyOf: branches } : { description, anyOf: branches };
}

function explicitlyNullable(schema: JsonSchema): boolean {
  if (schema.anyOf) return schema.anyOf.some(explicitlyNullable);
  return typesOf(schema).includes('null') || (schema.enum?.includes(null) ?? false) || schema.const === null;
}

function isEmptyTree(tree: NullAsAbsent): boolean {
  return !tree.absentIfNull && !tree.properties && !tree.items && tree.def === undefined;
}

/**
 * Removes `def` pointers to `$defs` trees that say nothing (no `absentIfNull` anywhere, even through further
 * defs), and the branches left empty; returns the trees still pointed at, or undefined if none.
 */
function dropIdleDefReferences(
  root: NullAsAbsent,
  defTrees: Record<string, NullAsAbsent>,
): Record<string, NullAsAbsent> | undefined {
  const meaningful = new Set<string>();
  const says = (tree: NullAsAbsent): boolean =>
    tree.absentIfNull === true ||
    (tree.def !== undefined && meaningful.has(tree.def)) ||
    Object.values(tree.properties ?? {}).some(says) ||
    (tree.items !== undefined && says(tree.items));
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, tree] of Object.entries(defTrees)) {
      if (!meaningful.has(name) && says(tree)) {
        meaningful.add(name);
        changed = true;
      }
    }
  }
  const clean = (tree: NullAsAbsent): void => {
    if (tree.def !== undefined && !meaningful.has(tree.def)) delete tree.def;
    for (const [name, child] of Object.entries(tree.properties ?? {})) {
      clean(child);
      if (isEmptyTree(child)) delete tree.properties![name];
    }
    if (tree.properties && Object.keys(tree.properties).length === 0) delete tree.properties;
    if (tree.items) {
      clean(tree.items);
      if (isEmptyTree(tree.items)) delete tree.items;
    }
  };
  clean(root);
  const used = [...meaningful].map((name): [string, NullAsAbsent] => {
    const tree = defTrees[name]!;
    clean(tree);
    return [name, tree];
  });
  return used.length > 0 ? Object.fromEntries(used) : undefined;
}
