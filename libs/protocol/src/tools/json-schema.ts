// JSON Schema values carried inside tool definitions (parameters, output, OpenAPI specs). We check only the
// outer shape the mesh relies on; the schema's own keywords pass through untouched.
import { z } from 'zod';

/** Any JSON Schema: an object of keywords, or `true`/`false`. */
export const JsonSchema = z.union([z.boolean(), z.looseObject({})]);
export type JsonSchema = z.infer<typeof JsonSchema>;

/** The schema of a tool's arguments: OpenAI function calling wants an object schema. */
export const JsonSchemaObject = z.looseObject({
  type: z.literal('object'),
  properties: z.record(z.string(), JsonSchema).optional(),
  required: z.array(z.string()).optional(),
});
export type JsonSchemaObject = z.infer<typeof JsonSchemaObject>;

/** What a tool that takes no arguments declares. */
export function emptyParameters(): JsonSchemaObject {
  return { type: 'object', properties: {} };
}

/** An arbitrary JSON object (variables, OpenAPI documents, fixed parameters). */
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

/** Whether an untyped value is a JSON object (not null, not an array): the one such check of the mesh. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
