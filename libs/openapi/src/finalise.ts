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
  const { readOnly: _readOnly, writeOnly: _writeOnly, ...rest } = schema;
  const out: JsonSchema = { ...rest };
  if (rest.properties) {
    out.properties = Object.fromEntries(
      Object.entries(rest.properties).map(([name, child]) => [name, finalise(child)]),
    );
  }
  if (rest.required) {
    const present = rest.properties;
    const required = present ? rest.required.filter((name) => Object.hasOwn(present, name)) : rest.required;
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  if (rest.items) out.items = finalise(rest.items);
  if (typeof rest.additionalProperties === 'object') {
    out.additionalProperties = finalise(rest.additionalProperties);
  }
  if (rest.anyOf) out.anyOf = rest.anyOf.map(finalise);
  if (rest.enum) out.enum = [...rest.enum];
  if (rest.examples) out.examples = [...rest.examples];
  carry?.(schema, out);
  memo?.set(schema, out);
  return out;
}
