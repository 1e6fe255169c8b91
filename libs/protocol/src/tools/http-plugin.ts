// Seed 000: the JSON standard for HTTP plugins ("blind execution": new tools need no code). Field names are
// exactly the seed's, so RuoYi's `sys_ai_plugin` rows can be submitted unchanged. Optional extensions in
// `execution` (timeout_ms, argument_locations, context_params) let every canonical HTTP tool be written back
// in this format.
import { z } from 'zod';
import { AuthConfig, CredentialName } from './http-auth.js';
import { ContextParams } from './context-params.js';
import { ArgumentLocation, HttpMethod, HttpUrlTemplate, ParamPlacement } from './http-request.js';
import { JsonSchemaObject } from './json-schema.js';

export const PluginStatus = z.enum(['enabled', 'disabled']);
export type PluginStatus = z.infer<typeof PluginStatus>;

/** RuoYi's status char ('0' = normal, '1' = disabled) or the words; parses to the words. */
export const PluginStatusInput = z
  .enum(['0', '1', 'enabled', 'disabled'])
  .transform((status): PluginStatus => (status === '0' ? 'enabled' : status === '1' ? 'disabled' : status));

export const HttpPluginExecution = z.object({
  method: HttpMethod,
  base_url: HttpUrlTemplate,
  content_type: z.string().min(1).optional(),
  param_placement: ParamPlacement.optional(),
  /** Extension: per-call timeout. */
  timeout_ms: z.int().positive().optional(),
  /** Extension: per-argument locations (tools imported from OpenAPI); wins over `param_placement`. */
  argument_locations: z.record(z.string(), ArgumentLocation).optional(),
  /** Extension: the task's values (user_id, variables.<name>, ...) put into headers or the query. */
  context_params: ContextParams.optional(),
});
export type HttpPluginExecution = z.infer<typeof HttpPluginExecution>;

export const HttpPlugin = z.object({
  schema_version: z.literal('v1').optional(),
  /** Unique English identifier, e.g. `search_company_basic`. */
  name: z.string().min(1).max(256),
  /** Display name, e.g. 企查查企业搜索. */
  title: z.string().optional(),
  /** The prompt the model reads to decide whether to call the tool. */
  description: z.string(),
  icon_url: z.string().optional(),
  parameters: JsonSchemaObject,
  execution: HttpPluginExecution,
  auth_config: AuthConfig.optional(),
  /** Credential names the plugin needs, checked before the task runs. */
  required_credentials: z.array(CredentialName).optional(),
  status: PluginStatusInput.optional(),
});
export type HttpPlugin = z.infer<typeof HttpPlugin>;
export type HttpPluginInput = z.input<typeof HttpPlugin>;
