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
  let same = !Object.hasOwn(schema, 'readOnly') && !Object.hasOwn(schema, 'writeOnly');
  let properties: Record<string, JsonSchema> | undefined;
  if (schema.properties) {
    properties = {};
    for (const name in schema.properties) {
      const child = schema.properties[name]!;
      const done = finalise(child);
      if (done !== child) same = false;
      properties[name] = done;
    }
  }
  const items = schema.items && finalise(schema.items);
  const values =
    typeof schema.additionalProperties === 'object' ? finalise(schema.additionalProperties) : undefined;
  const anyOf = schema.anyOf?.map(finalise);
  if (same) {
    same =
      items === schema.items &&
      values ===
        (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined) &&
      (anyOf === undefined || anyOf.every((branch, i) => branch === schema.anyOf![i])) &&
      (schema.required === undefined ||
        (schema.required.length > 0 &&
          (schema.properties === undefined ||
            schema.required.every((name) => Object.hasOwn(schema.properties!, name)))));
  }
  if (same) {
    // Nothing to drop or filter here or below: the converted schema is its own final form (it is never
    // changed in place afterwards; sharing and the budget copy what they edit).
    memo?.set(schema, schema);
    return schema;
  }
  const { readOnly: _readOnly, writeOnly: _writeOnly, ...out } = schema;
  if (properties) out.properties = properties;
  if (schema.required) {
    const present = schema.properties;
    const required = present
      ? schema.required.filter((name) => Object.hasOwn(present, name))
      : schema.required;
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  if (items) out.items = items;
  if (values) out.additionalProperties = values;
  if (anyOf) out.anyOf = anyOf;
  if (schema.enum) out.enum = [...schema.enum];
  if (schema.examples) out.examples = [...schema.examples];
  carry?.(schema, out);
  memo?.set(schema, out);
  return out;
}
