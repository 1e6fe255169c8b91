// Seed 004's `_dynamic_tools` entries: a tool discovered at run time by action recall, called through the tool
// box proxy at `api_url`. `fixed_params` are already-instantiated arguments by location; the model's own
// arguments win over them and are placed by `original_schema` (the tool's OpenAPI `api_spec`).
import { z } from 'zod';
import { JsonObject, JsonSchemaObject } from './json-schema.js';
import { HttpUrlTemplate } from './http-request.js';

export const FixedParams = z.object({
  header: JsonObject.default({}),
  path: JsonObject.default({}),
  query: JsonObject.default({}),
  body: JsonObject.default({}),
  /** Only when the tool's spec declares a cookie parameter. */
  cookie: JsonObject.optional(),
});
export type FixedParams = z.infer<typeof FixedParams>;

export const DynamicTool = z.object({
  /** From the tool detail; not necessarily a legal function name (the seed's example is Chinese). */
  name: z.string().min(1),
  description: z.string(),
  parameters: JsonSchemaObject,
  api_url: HttpUrlTemplate,
  original_schema: JsonObject,
  fixed_params: FixedParams.prefault({}),
  /** Tells apart the tools of several actions (recall with `unique_identities`). */
  action_id: z.string().min(1).optional(),
});
export type DynamicTool = z.infer<typeof DynamicTool>;
export type DynamicToolInput = z.input<typeof DynamicTool>;
