// Seed 003 §2.2: `*.tool.json` metadata of direct-service tools (sandboxed scripts, service methods). Every field
// of the seed, camelCase as in the seed; the handler's conditional fields are enforced per `handler.type`.
import { z } from 'zod';
import { JsonObject, JsonSchema, JsonSchemaObject } from './json-schema.js';

export const ScriptLanguage = z.enum(['python', 'nodejs', 'bun']);
export type ScriptLanguage = z.infer<typeof ScriptLanguage>;

export const ExternalScriptHandler = z.object({
  type: z.literal('external-script'),
  /** Relative to the sandbox's base directory, e.g. `python/data_analyzer.py`. */
  scriptPath: z.string().min(1),
  language: ScriptLanguage,
  entryPoint: z.string().min(1).optional(),
});

export const ServiceMethodHandler = z.object({
  type: z.literal('service-method'),
  serviceName: z.string().min(1),
  methodName: z.string().min(1),
});

export const ToolJsonHandler = z.discriminatedUnion('type', [ExternalScriptHandler, ServiceMethodHandler]);
export type ToolJsonHandler = z.infer<typeof ToolJsonHandler>;

/** Declared needs; the executor grants them only as far as its own policy allows. */
export const ToolJsonSecurityContext = z.object({
  fileAccess: z
    .object({
      allowRead: z.array(z.string()).optional(),
      allowWrite: z.array(z.string()).optional(),
    })
    .optional(),
  networkAccess: z.object({ allowHosts: z.array(z.string()).optional() }).optional(),
  requiredCapabilities: z.array(z.string()).optional(),
});
export type ToolJsonSecurityContext = z.infer<typeof ToolJsonSecurityContext>;

export const ToolJsonExample = z.object({
  description: z.string().optional(),
  input: JsonObject,
  expectedOutput: z.unknown().optional(),
});

export const ToolJson = z.object({
  /** Globally unique, `namespace:tool-name`, e.g. `core:execute-python-script`. */
  toolId: z.string().min(1).max(256).regex(/^\S+$/, 'toolId must not contain whitespace'),
  displayName: z.string().min(1),
  description: z.string(),
  version: z.string().min(1),
  handler: ToolJsonHandler,
  parameters: JsonSchemaObject.optional(),
  output: JsonSchema.optional(),
  securityContext: ToolJsonSecurityContext.optional(),
  examples: z.array(ToolJsonExample).optional(),
  tags: z.array(z.string()).optional(),
  /** Extension: how long one call may run, in ms (the executor caps it at its SCRIPT_MAX_TIMEOUT_MS). */
  timeoutMs: z.int().positive().optional(),
});
export type ToolJson = z.infer<typeof ToolJson>;
