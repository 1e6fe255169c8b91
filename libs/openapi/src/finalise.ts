// Last pass over a converted schema: a copy (never the converter's own objects, which are memoised
// while converting; copies are shared between operations only through `memo`), without the converter's internal markers, with `required` naming only properties
// that are really there (readOnly ones were dropped).

import type { JsonSchema } from './json-schema.js';

/**
 * `carry(from, to)` is told of each copy made, so a caller can keep facts it holds by identity. With
 * `memo`, a schema object met again (a memoised sub-schema in another argument or operation) gets the
 * copy made the first time: finalising is a pure function of the schema, and sharing the copy lets later
 * passes (`shareRepeatedSchemas`) measure it once per document.
 */
export function finaliseSchema(
  schema: JsonSchema,
  carry?: (from: JsonSchema, to: JsonSchema) => void,
  memo?: WeakMap<JsonSchema, JsonSchema>,
): JsonSchema {
  const known = memo?.get(schema);
  if (known !== undefined) return known;
  const finalise = (child: JsonSchema): JsonSchema => finaliseSchema(child, carry, memo);
  const { readOnly: _readOnly, writeOnly: _writeOnly, ...out } = schema;
  if (schema.properties) {
    const properties: Record<string, JsonSchema> = {};
    for (const name in schema.properties) properties[name] = finalise(schema.properties[name]!);
    out.properties = properties;
  }
  if (schema.required) {
    const present = schema.properties;
    const required = present ? schema.required.filter((name) => Object.hasOwn(present, name)) : schema.required;
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  if (schema.items) out.items = finalise(schema.items);
  if (typeof schema.additionalProperties === 'object') {
    out.additionalProperties = finalise(schema.additionalProperties);
  }
  if (schema.anyOf) out.anyOf = schema.anyOf.map(finalise);
  if (schema.enum) out.enum = [...schema.enum];
  if (schema.examples) out.examples = [...schema.examples];
  carry?.(schema, out);
  memo?.set(schema, out);
  return out;
}
