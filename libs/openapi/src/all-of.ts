// Merges already-converted schemas as `allOf` would combine them, into ONE schema a model can read:
// properties are united (same-named ones merged in turn), `required` lists joined, bounds tightened.
// Disagreements (string vs object, disjoint enums, two different consts, two unions) are reported
// through `report` and the earlier branch wins; nothing is thrown.

import { jsonKey } from './json.js';
import { typesOf, withTypes, type JsonSchema, type JsonSchemaType } from './json-schema.js';

export type ConflictReporter = (message: string) => void;

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'] as const;
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'] as const;

export function mergeAllOf(schemas: readonly JsonSchema[], report: ConflictReporter): JsonSchema {
  let merged: JsonSchema = {};
  for (const schema of schemas) merged = mergeTwo(merged, schema, report, '');
  return merged;
}

function mergeTwo(a: JsonSchema, b: JsonSchema, report: ConflictReporter, at: string): JsonSchema {
  // A `$ref` into `$defs` (a recursive type) cannot be merged into properties: it stays as a one-branch
  // `anyOf`, which a JSON Schema reads as "and also this".
  if (b.$ref !== undefined) {
    if (Object.keys(a).length === 0) return { ...b };
    if (a.anyOf === undefined) return { ...a, anyOf: [{ $ref: b.$ref }] };
    report(`a recursive reference in allOf beside a union${at === '' ? '' : ` at "${at}"`}; kept the union`);
    return a;
  }
  if (a.$ref !== undefined) {
    const { $ref, ...rest } = a;
    return mergeTwo({ ...rest, anyOf: [{ $ref }] }, b, report, at);
  }
  const out: JsonSchema = { ...a };
  const where = at === '' ? '' : ` at "${at}"`;

  if (b.type !== undefined) {
    const types = a.type === undefined ? typesOf(b) : intersectTypes(typesOf(a), typesOf(b));
    if (types.length === 0) {
      report(
        `allOf branches disagree on type${where}: ${describeTypes(a)} vs ${describeTypes(b)}; kept ${describeTypes(a)}`,
      );
    } else {
      Object.assign(out, withTypes({}, types));
    }
  }

  if (b.properties) {
    const properties = { ...(a.properties ?? {}) };
    for (const [name, schema] of Object.entries(b.properties)) {
      const existing = properties[name];
      properties[name] = existing
        ? mergeTwo(existing, schema, report, at === '' ? name : `${at}.${name}`)
        : schema;
    }
    out.properties = properties;
  }

  if (b.required) out.required = [...new Set([...(a.required ?? []), ...b.required])];

  if (b.enum) {
    if (!a.enum) {
      out.enum = b.enum;
    } else {
      const keep = new Set(b.enum.map(jsonKey));
      const common = a.enum.filter((value) => keep.has(jsonKey(value)));
      if (common.length === 0)
        report(`allOf branches have no enum value in common${where}; kept the first list`);
      else out.enum = common;
    }
  }

  if (b.const !== undefined) {
    if (a.const !== undefined && jsonKey(a.const) !== jsonKey(b.const)) {
      report(`allOf branches require different constants${where}; kept ${JSON.stringify(a.const)}`);
    } else {
      out.const = b.const;
    }
  }

  if (b.anyOf) {
    if (a.anyOf) report(`more than one allOf branch is a union${where}; kept the first union`);
    else out.anyOf = b.anyOf;
  }

  if (b.items) out.items = a.items ? mergeTwo(a.items, b.items, report, `${at}[]`) : b.items;

  if (b.additionalProperties !== undefined) {
    const ap = a.additionalProperties;
    if (ap === undefined || ap === true) out.additionalProperties = b.additionalProperties;
    else if (b.additionalProperties === false) out.additionalProperties = false;
    else if (ap !== false && b.additionalProperties !== true) {
      out.additionalProperties = mergeTwo(ap, b.additionalProperties, report, `${at}{}`);
    }
  }

  for (const key of LOWER_BOUNDS) {
    const value = b[key];
    if (value !== undefined) out[key] = a[key] === undefined ? value : Math.max(a[key], value);
  }
  for (const key of UPPER_BOUNDS) {
    const value = b[key];
    if (value !== undefined) out[key] = a[key] === undefined ? value : Math.min(a[key], value);
  }

  if (b.readOnly) out.readOnly = true;
  if (b.writeOnly) out.writeOnly = true;
  if (b.deprecated) out.deprecated = true;
  if (b.uniqueItems) out.uniqueItems = true;

  // Annotations and the remaining assertions: the first branch that states one wins.
  for (const key of [
    'description',
    'default',
    'examples',
    'format',
    'pattern',
    'multipleOf',
    'contentEncoding',
    'contentMediaType',
  ] as const) {
    if (out[key] === undefined && b[key] !== undefined) (out as Record<string, unknown>)[key] = b[key];
  }
  return out;
}

function intersectTypes(a: readonly JsonSchemaType[], b: readonly JsonSchemaType[]): JsonSchemaType[] {
  const result: JsonSchemaType[] = [];
  for (const type of a) {
    if (b.includes(type)) result.push(type);
    else if (type === 'number' && b.includes('integer')) result.push('integer');
    else if (type === 'integer' && b.includes('number')) result.push('integer');
  }
  return [...new Set(result)];
}

function describeTypes(schema: JsonSchema): string {
  return typesOf(schema).join('|') || 'any';
}
