// Last pass over a converted schema: a fresh tree (memoised sub-schemas are shared between operations
// while converting), without the converter's internal markers, with `required` naming only properties
// that are really there (readOnly ones were dropped).

import type { JsonSchema } from './json-schema.js';

export function finaliseSchema(schema: JsonSchema): JsonSchema {
  const { readOnly: _readOnly, writeOnly: _writeOnly, ...rest } = schema;
  const out: JsonSchema = { ...rest };
  if (rest.properties) {
    out.properties = Object.fromEntries(
      Object.entries(rest.properties).map(([name, child]) => [name, finaliseSchema(child)]),
    );
  }
  if (rest.required) {
    const present = rest.properties;
    const required = present ? rest.required.filter((name) => Object.hasOwn(present, name)) : rest.required;
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  if (rest.items) out.items = finaliseSchema(rest.items);
  if (typeof rest.additionalProperties === 'object') {
    out.additionalProperties = finaliseSchema(rest.additionalProperties);
  }
  if (rest.anyOf) out.anyOf = rest.anyOf.map(finaliseSchema);
  if (rest.enum) out.enum = [...rest.enum];
  if (rest.examples) out.examples = [...rest.examples];
  return out;
}
