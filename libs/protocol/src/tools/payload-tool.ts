// Seed 001's tool entries (`runtime_config.tools[]`): `{type, name, description, parameter_schema,
// execution_config}`, as a trusted upstream puts them into a pre-assembled payload. Accepts both spellings of the
// native class key (seed 001 `class`, seed 002 `class_name`) and seed 001's short auth mapping, which means an
// API key in a header. HTTP tools may also carry seed 000's richer fields, so nothing forces a lossy payload.
import { z } from 'zod';
import { AuthConfig, AuthLocation, CredentialName } from './http-auth.js';
import { ContextParams } from './context-params.js';
import { ArgumentLocation, HttpMethod, HttpUrlTemplate, ParamPlacement } from './http-request.js';
import { JsonSchemaObject } from './json-schema.js';

/** Seed 001 `{ "source": "QCC_KEY", "target": "Token" }`: vault[source] goes into header `target`. */
export const ShortAuthConfig = z.object({
  source: CredentialName,
  target: z.string().min(1),
  location: AuthLocation.optional(),
});
export type ShortAuthConfig = z.infer<typeof ShortAuthConfig>;

export const PayloadAuthConfig = z.union([AuthConfig, ShortAuthConfig]);
export type PayloadAuthConfig = z.infer<typeof PayloadAuthConfig>;

export function isShortAuthConfig(auth: PayloadAuthConfig): auth is ShortAuthConfig {
  return !('type' in auth);
}

export const NativeExecutionConfig = z
  .object({
    class: z.string().min(1).optional(),
    class_name: z.string().min(1).optional(),
  })
  .superRefine((config, ctx) => {
    if (config.class === undefined && config.class_name === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['class_name'],
        message: 'a native tool needs class or class_name',
      });
    } else if (
      config.class !== undefined &&
      config.class_name !== undefined &&
      config.class !== config.class_name
    ) {
      ctx.addIssue({ code: 'custom', path: ['class_name'], message: 'class and class_name disagree' });
    }
  });
export type NativeExecutionConfig = z.infer<typeof NativeExecutionConfig>;

export const HttpExecutionConfig = z.object({
  url: HttpUrlTemplate,
  method: HttpMethod,
  auth_config: PayloadAuthConfig.optional(),
  content_type: z.string().min(1).optional(),
  param_placement: ParamPlacement.optional(),
  timeout_ms: z.int().positive().optional(),
  argument_locations: z.record(z.string(), ArgumentLocation).optional(),
  /** The task's values (user_id, variables.<name>, ...) put into headers or the query, never the model's. */
  context_params: ContextParams.optional(),
});
export type HttpExecutionConfig = z.infer<typeof HttpExecutionConfig>;

const PayloadToolCommon = {
  name: z.string().min(1).max(256),
  description: z.string(),
  parameter_schema: JsonSchemaObject,
};

export const NativePayloadTool = z.object({
  type: z.literal('NATIVE'),
  ...PayloadToolCommon,
  execution_config: NativeExecutionConfig,
});
export type NativePayloadTool = z.infer<typeof NativePayloadTool>;

export const HttpPayloadTool = z.object({
  type: z.literal('HTTP'),
  ...PayloadToolCommon,
  execution_config: HttpExecutionConfig,
});
export type HttpPayloadTool = z.infer<typeof HttpPayloadTool>;

export const PayloadTool = z.discriminatedUnion('type', [NativePayloadTool, HttpPayloadTool]);
export type PayloadTool = z.infer<typeof PayloadTool>;
