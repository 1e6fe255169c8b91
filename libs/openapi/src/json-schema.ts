// The JSON Schema (draft 2020-12 subset) this library emits for function parameters. Every schema is
// self-contained: its only `$ref`s point into its own root `$defs` (recursive types, and schemas used several
// times), and it has no OpenAPI-only keywords (`nullable`, `discriminator`, `example`, ...).

export const JSON_SCHEMA_TYPES = [
  'string',
  'number',
  'integer',
  'boolean',
  'object',
  'array',
  'null',
] as const;
export type JsonSchemaType = (typeof JSON_SCHEMA_TYPES)[number];

export interface JsonSchema {
  /** Only `#/$defs/<name>`, naming a schema of the function's root `$defs`. */
  $ref?: string;
  type?: JsonSchemaType | JsonSchemaType[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  examples?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  contentEncoding?: string;
  contentMediaType?: string;
  deprecated?: boolean;
  /** Present only while converting (request schemas drop readOnly properties); never in the output. */
  readOnly?: boolean;
  /** Present only while converting; never in the output. */
  writeOnly?: boolean;
}

/** The `parameters` object of an OpenAI function definition. */
export interface FunctionParameters {
  type: 'object';
  properties: Record<string, JsonSchema>;
  required: string[];
  additionalProperties?: false;
  /** Schemas the others point at with `$ref: '#/$defs/<name>'` (recursive, or used several times). */
  $defs?: Record<string, JsonSchema>;
}

export function typesOf(schema: JsonSchema): JsonSchemaType[] {
  if (schema.type === undefined) return [];
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

/** `type` in its shortest form: a single name, a list, or absent when empty. */
export function withTypes(schema: JsonSchema, types: readonly JsonSchemaType[]): JsonSchema {
  const unique = [...new Set(types)];
  const { type: _type, ...rest } = schema;
  if (unique.length === 0) return rest;
  return { ...rest, type: unique.length === 1 ? unique[0]! : unique };
}

export function allowsNull(schema: JsonSchema): boolean {
  // What a `$ref` allows is known only at its target; it is taken as not null, so null is added explicitly.
  if (schema.$ref !== undefined) return false;
  if (schema.anyOf) return schema.anyOf.some(allowsNull);
  if (schema.enum) return schema.enum.includes(null);
  if (schema.const !== undefined) return schema.const === null;
  const types = typesOf(schema);
  return types.length === 0 || types.includes('null');
}

export function isObjectSchema(schema: JsonSchema): boolean {
  const types = typesOf(schema);
  return types.includes('object') || (types.length === 0 && schema.properties !== undefined);
}

/** The schema, also accepting `null` (OpenAPI 3.0 `nullable: true`, or an optional argument in strict mode). */
export function makeNullable(schema: JsonSchema): JsonSchema {
  if (schema.$ref !== undefined) {
    const { description, ...reference } = schema;
    const anyOf: JsonSchema[] = [reference, { type: 'null' }];
    return description === undefined ? { anyOf } : { description, anyOf };
  }
  if (allowsNull(schema) && typesOf(schema).length > 0) return schema;
  if (schema.anyOf) {
    if (schema.anyOf.some(allowsNull)) return schema;
    return { ...schema, anyOf: [...schema.anyOf, { type: 'null' }] };
  }
  let out: JsonSchema = schema;
  if (out.const !== undefined) {
    const { const: value, ...rest } = out;
    out = { ...rest, enum: [value] };
  }
  if (out.enum && !out.enum.includes(null)) out = { ...out, enum: [...out.enum, null] };
  const types = typesOf(out);
  if (types.length > 0 && !types.includes('null')) out = withTypes(out, [...types, 'null']);
  return out;
}
