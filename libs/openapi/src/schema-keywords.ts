// Converts the keywords of ONE OpenAPI Schema Object (sub-schemas go back through the host, which owns
// `$ref` handling and limits): types and 3.0 `nullable`, 3.1 type arrays, binary formats as base64 text,
// enums (bounded), constraints that are valid JSON Schema, descriptions (bounded), `allOf` and unions.

import { mergeAllOf } from './all-of.js';
import {
  asArray,
  asFiniteNumber,
  asNonNegativeInteger,
  asString,
  isJsonObject,
  isPrimitive,
  uniqueJsonValues,
  type JsonObject,
} from './json.js';
import {
  JSON_SCHEMA_TYPES,
  makeNullable,
  withTypes,
  type JsonSchema,
  type JsonSchemaType,
} from './json-schema.js';
import { NoteCode } from './notes.js';
import { ExampleMode, type ResolvedOptions } from './options.js';
import { boundText, joinSentences } from './text.js';
import { applyUnion } from './unions.js';

/** What keyword conversion needs from its caller (implemented by SchemaNormaliser). */
export interface KeywordHost {
  readonly options: ResolvedOptions;
  node(schema: unknown, depth: number): JsonSchema;
  note(code: NoteCode, message: string): void;
  /** A map given as `{$ref}` (e.g. a whole `properties` object), resolved; other values as they are. */
  resolveMap(value: unknown): unknown;
}

const BINARY_DESCRIPTION = 'Binary content, base64-encoded (a data: URL is also accepted).';
const EXAMPLES_KEPT = 3;

// Valid JSON Schema, but nothing a model-facing request schema can use: dropped, with a note.
const DROPPED_KEYWORDS = [
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'prefixItems',
  'dependentRequired',
  'dependentSchemas',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  '$dynamicRef',
] as const;

// Keywords most schemas lack, in groups: one pass over the keys a schema has tells which groups to read.
// (Looking up absent keys one by one was most of the time spent here: parsed documents' objects have
// many shapes, so each miss is a slow lookup.)
const DROPPED = 1;
const CONSTRAINTS = 2;
const EXAMPLES = 4;
const UNION = 8;
const FLAGS = 16;
const ENUM = 32;
const FORMAT = 64;
const ALL_OF = 128;
const STRUCTURE = 256;
const KEY_GROUPS = new Map<string, number>([
  ...DROPPED_KEYWORDS.map((key): [string, number] => [key, DROPPED]),
  ...[
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'multipleOf',
    'minLength',
    'maxLength',
    'minItems',
    'maxItems',
    'minProperties',
    'maxProperties',
    'uniqueItems',
    'default',
  ].map((key): [string, number] => [key, CONSTRAINTS]),
  ['example', EXAMPLES],
  ['examples', EXAMPLES],
  ['oneOf', UNION],
  ['anyOf', UNION],
  ['readOnly', FLAGS],
  ['writeOnly', FLAGS],
  ['deprecated', FLAGS],
  ['nullable', FLAGS],
  ['x-nullable', FLAGS],
  ['const', ENUM],
  ['enum', ENUM],
  ['format', FORMAT],
  ['pattern', FORMAT],
  ['contentMediaType', FORMAT],
  ['contentEncoding', FORMAT],
  ['allOf', ALL_OF],
  ['properties', STRUCTURE],
  ['required', STRUCTURE],
  ['additionalProperties', STRUCTURE],
  ['items', STRUCTURE],
]);

function keyGroups(schema: JsonObject): number {
  let groups = 0;
  for (const key in schema) groups |= KEY_GROUPS.get(key) ?? 0;
  return groups;
}

export function convertKeywords(schema: JsonObject, depth: number, host: KeywordHost): JsonSchema {
  let out: JsonSchema = {};
  const groups = keyGroups(schema);
  let types = readTypes(schema, host);
  const binary = groups & FORMAT ? isBinary(schema, types) : schema.type === 'file';
  if (binary) {
    types = ['string', ...types.filter((type) => type === 'null')];
    host.note(NoteCode.BINARY_AS_BASE64, 'binary content is asked for as base64 text');
  }
  // `types` has no repeats (see readTypes): `withTypes` without its copies.
  if (types.length > 0) out = { type: types.length === 1 ? types[0]! : types };

  const description = describe(schema, host, binary, groups);
  if (description !== undefined) out.description = description;

  const declared = groups & STRUCTURE ? host.resolveMap(schema.properties) : undefined;
  if (isJsonObject(declared)) {
    const properties: Record<string, JsonSchema> = {};
    for (const [name, child] of Object.entries(declared)) {
      const converted = host.node(child, depth + 1);
      // A request never carries what the server alone writes.
      if (converted.readOnly) continue;
      properties[name] = converted;
    }
    out.properties = properties;
  }
  if (groups & STRUCTURE) convertStructure(schema, out, depth, host);

  if (binary || groups & FORMAT) copyFormat(schema, out, binary, host);
  if (groups & ENUM) copyEnum(schema, out, host);
  if (groups & CONSTRAINTS) copyConstraints(schema, out);
  if (groups & EXAMPLES) copyExamples(schema, out, host.options);
  if (groups & FLAGS) {
    if (schema.readOnly === true) out.readOnly = true;
    if (schema.writeOnly === true) out.writeOnly = true;
    if (schema.deprecated === true) out.deprecated = true;
  }

  const composed = groups & (ALL_OF | UNION) && (schema.allOf || schema.anyOf || schema.oneOf);
  if (out.type === undefined && !composed) {
    if (out.properties || out.additionalProperties !== undefined) out.type = 'object';
    else if (out.items) out.type = 'array';
  }

  const reportConflict = (message: string): void => host.note(NoteCode.ALLOF_CONFLICT, message);
  if (groups & ALL_OF && Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const branches = schema.allOf.map((branch) => host.node(branch, depth));
    // This schema's own keywords come first, so its description wins over inherited ones.
    out = mergeAllOf([out, ...branches], reportConflict);
  }

  const union = groups & UNION ? [...asArray(schema.oneOf), ...asArray(schema.anyOf)] : [];
  if (union.length > 0) {
    if (Array.isArray(schema.oneOf) && Array.isArray(schema.anyOf)) {
      host.note(NoteCode.UNION_SIMPLIFIED, 'oneOf and anyOf on one schema were read as one union');
    }
    const discriminator = isJsonObject(schema.discriminator)
      ? asString(schema.discriminator.propertyName)
      : undefined;
    out = applyUnion(
      out,
      union.map((branch) => host.node(branch, depth)),
      {
        mode: host.options.unions,
        report: reportConflict,
        simplified: (message) => host.note(NoteCode.UNION_SIMPLIFIED, message),
        discriminator,
      },
    );
  }

  for (const keyword of groups & DROPPED ? DROPPED_KEYWORDS : []) {
    if (schema[keyword] !== undefined) {
      host.note(NoteCode.KEYWORD_DROPPED, `"${keyword}" has no model-facing equivalent and was dropped`);
    }
  }

  if (groups & FLAGS && (schema.nullable === true || schema['x-nullable'] === true)) out = makeNullable(out);
  return out;
}

/** `required`, `additionalProperties` and `items` (after `properties`, in this order). */
function convertStructure(schema: JsonObject, out: JsonSchema, depth: number, host: KeywordHost): void {
  const required = asArray(schema.required).filter((name): name is string => typeof name === 'string');
  if (required.length > 0) out.required = [...new Set(required)];

  if (typeof schema.additionalProperties === 'boolean') {
    out.additionalProperties = schema.additionalProperties;
  } else if (isJsonObject(schema.additionalProperties)) {
    out.additionalProperties = host.node(schema.additionalProperties, depth + 1);
  }

  if (isJsonObject(schema.items) || schema.items === true) {
    out.items = host.node(schema.items, depth + 1);
  } else if (Array.isArray(schema.items) && schema.items.length > 0) {
    host.note(
      NoteCode.KEYWORD_DROPPED,
      'a tuple `items` list became one item schema accepting any of its entries',
    );
    out.items = host.node({ anyOf: schema.items }, depth + 1);
  }
}

function readTypes(schema: JsonObject, host: KeywordHost): JsonSchemaType[] {
  if (schema.type === undefined) return [];
  if (typeof schema.type === 'string' && JSON_SCHEMA_TYPES.includes(schema.type as JsonSchemaType)) {
    return [schema.type as JsonSchemaType];
  }
  const raw = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  const types: JsonSchemaType[] = [];
  for (const type of raw) {
    if (type === 'file')
      types.push('string'); // Swagger 2.0 file parameters, see isBinary
    else if (JSON_SCHEMA_TYPES.includes(type as JsonSchemaType)) types.push(type as JsonSchemaType);
    else host.note(NoteCode.INVALID_INPUT, `unknown type ${JSON.stringify(type)} was ignored`);
  }
  return [...new Set(types)];
}

function isBinary(schema: JsonObject, types: readonly JsonSchemaType[]): boolean {
  if (schema.type === 'file') return true;
  const stringish = types.length === 0 || types.includes('string');
  if (!stringish) return false;
  if (schema.format === 'binary') return true;
  // OpenAPI 3.1 spells binary strings with contentMediaType/contentEncoding instead of a format.
  const mediaType = asString(schema.contentMediaType);
  return (
    mediaType !== undefined && !/^text\/|json|xml/.test(mediaType) && schema.contentEncoding === undefined
  );
}

function describe(
  schema: JsonObject,
  host: KeywordHost,
  binary: boolean,
  groups: number,
): string | undefined {
  // Titles are mostly internal type names (Stripe's `optional_fields_address`); for a constant,
  // though, the title is the value's name (Discord's `GUILD_TEXT`), which a model should see.
  const isConstant =
    groups & ENUM && (schema.const !== undefined || (Array.isArray(schema.enum) && schema.enum.length === 1));
  const text = asString(schema.description) ?? (isConstant ? asString(schema.title) : undefined);
  const deprecated = groups & FLAGS && schema.deprecated === true ? 'Deprecated.' : undefined;
  const full = joinSentences(deprecated, text, binary ? BINARY_DESCRIPTION : undefined);
  if (full === undefined) return undefined;
  const bounded = boundText(full, host.options.maxDescriptionLength);
  if (bounded.truncated) {
    host.note(
      NoteCode.DESCRIPTION_TRUNCATED,
      `a description was cut to ${host.options.maxDescriptionLength} characters`,
    );
  }
  return bounded.text;
}

function copyFormat(schema: JsonObject, out: JsonSchema, binary: boolean, host: KeywordHost): void {
  if (binary) {
    out.contentEncoding = 'base64';
    out.contentMediaType = asString(schema.contentMediaType) ?? 'application/octet-stream';
    return;
  }
  const format = asString(schema.format);
  if (format === 'byte') {
    out.contentEncoding = 'base64';
    out.description = joinSentences(out.description, 'Base64-encoded.');
  } else if (format !== undefined && format !== '') {
    out.format = format;
  }
  const pattern = asString(schema.pattern);
  if (pattern !== undefined) {
    const usable = ecmaPattern(pattern);
    if (usable !== undefined) out.pattern = usable;
    else
      host.note(
        NoteCode.INVALID_INPUT,
        `pattern ${JSON.stringify(pattern)} is not an ECMAScript regular expression and was dropped`,
      );
  }
}

function copyEnum(schema: JsonObject, out: JsonSchema, host: KeywordHost): void {
  if (schema.const !== undefined) out.const = schema.const;
  if (!Array.isArray(schema.enum)) return;
  const values = uniqueJsonValues(schema.enum);
  if (values.length === 0) {
    host.note(NoteCode.INVALID_INPUT, 'an empty enum was ignored');
    return;
  }
  const max = host.options.maxEnumValues;
  if (values.length <= max) {
    out.enum = values;
    return;
  }
  host.note(
    NoteCode.ENUM_BOUNDED,
    `an enum of ${values.length} values (over ${max}) became a described free value`,
  );
  const sample = values
    .slice(0, 20)
    .map((value) => JSON.stringify(value))
    .join(', ');
  out.description = joinSentences(
    out.description,
    `One of ${values.length} allowed values, e.g. ${sample}, …`,
  );
}

function copyConstraints(schema: JsonObject, out: JsonSchema): void {
  for (const key of ['minimum', 'maximum'] as const) {
    const value = asFiniteNumber(schema[key]);
    if (value !== undefined) out[key] = value;
  }
  // OpenAPI 3.0 says `exclusiveMinimum: true` beside `minimum`; JSON Schema wants the bound itself.
  for (const [exclusive, inclusive] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    const value = schema[exclusive];
    if (typeof value === 'number' && Number.isFinite(value)) out[exclusive] = value;
    else if (value === true && out[inclusive] !== undefined) {
      out[exclusive] = out[inclusive];
      delete out[inclusive];
    }
  }
  const multipleOf = asFiniteNumber(schema.multipleOf);
  if (multipleOf !== undefined && multipleOf > 0) out.multipleOf = multipleOf;
  for (const key of [
    'minLength',
    'maxLength',
    'minItems',
    'maxItems',
    'minProperties',
    'maxProperties',
  ] as const) {
    const value = asNonNegativeInteger(schema[key]);
    if (value !== undefined) out[key] = value;
  }
  if (schema.uniqueItems === true) out.uniqueItems = true;
  if (schema.default !== undefined) out.default = schema.default;
}

function copyExamples(schema: JsonObject, out: JsonSchema, options: ResolvedOptions): void {
  if (options.examples === ExampleMode.NONE) return;
  const candidates = [...(schema.example !== undefined ? [schema.example] : []), ...asArray(schema.examples)];
  const kept = candidates.filter((value) => options.examples === ExampleMode.ALL || isPrimitive(value));
  if (kept.length > 0) out.examples = uniqueJsonValues(kept).slice(0, EXAMPLES_KEPT);
}

function isUnicodeRegExp(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

// After a backslash, what Unicode-mode regular expressions accept: syntax characters, `-`, and letters
// or digits (classes, control escapes, back-references). Anything else (`\:`, `\@`) is a needless escape
// other regex dialects tolerate.
const VALID_ESCAPED = /[\\^$.*+?()[\]{}|/\-A-Za-z0-9]/;

/** The pattern as a JSON Schema (ECMAScript, Unicode-mode) pattern: as is, or without needless escapes. */
function ecmaPattern(pattern: string): string | undefined {
  if (isUnicodeRegExp(pattern)) return pattern;
  let repaired = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    const next = pattern[i + 1];
    if (char === '\\' && next !== undefined) {
      repaired += VALID_ESCAPED.test(next) ? char + next : next;
      i += 1;
    } else {
      repaired += char;
    }
  }
  return isUnicodeRegExp(repaired) ? repaired : undefined;
}

/**
 * A described placeholder for a schema that is not expanded (recursion, depth or size limit): it keeps
 * the target's type and the start of its description, and accepts any content of that type.
 */
export function stubFor(target: unknown, reason: string): JsonSchema {
  const schema = isJsonObject(target) ? target : {};
  const rawTypes = Array.isArray(schema.type) ? schema.type : [schema.type];
  let types = rawTypes.filter((type): type is JsonSchemaType =>
    JSON_SCHEMA_TYPES.includes(type as JsonSchemaType),
  );
  if (types.length === 0 && isJsonObject(schema.properties)) types = ['object'];
  if (types.length === 0 && schema.items !== undefined) types = ['array'];
  const summary = asString(schema.description)?.split(/(?<=\.)\s/)[0];
  const description = joinSentences(summary ? boundText(summary, 200).text : undefined, reason);
  return withTypes(description === undefined ? {} : { description }, types);
}
