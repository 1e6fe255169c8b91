// Last pass over a converted schema: a fresh tree (memoised sub-schemas are shared between operations
// while converting), without the converter's internal markers, with `required` naming only properties
// that are really there (readOnly ones were dropped).

import type { JsonSchema } from './json-schema.js';

/** `carry(from, to)` is told of each copy made, so a caller can keep facts it holds by identity. */
export function finaliseSchema(
  schema: JsonSchema,
  carry?: (from: JsonSchema, to: JsonSchema) => void,
): JsonSchema {
  const finalise = (child: JsonSchema): JsonSchema => finaliseSchema(child, carry);
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
  return out;
}
