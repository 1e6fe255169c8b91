// Seed 000's storage: a row of RuoYi's `sys_ai_plugin` table, importable as it is exported. The row holds
// the plugin split over columns: `parameter_schema` is the plugin's `parameters`, and `execution_config`
// holds its `execution` and `auth_config` (flat, `{method, base_url, …, auth_config}`, or nested,
// `{execution, auth_config}`). JSON columns arrive as values or as their JSON text (JDBC and most
// exporters give text); nullable columns may be null. Other columns (audit fields and the like) are
// ignored. The row becomes the seed 000 plugin it stores.
import { z } from 'zod';
import { AuthConfig, CredentialName } from './http-auth.js';
import { HttpPlugin, HttpPluginExecution, PluginStatusInput } from './http-plugin.js';
import { JsonSchemaObject } from './json-schema.js';

/** A JSON column: the value, or its JSON text. */
function jsonColumn<T extends z.ZodType>(schema: T) {
  return z.preprocess((value, ctx) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'the column holds text that is not JSON' });
      return z.NEVER;
    }
  }, schema);
}

const FlatExecutionConfig = HttpPluginExecution.extend({ auth_config: AuthConfig.nullish() });
const NestedExecutionConfig = z.object({ execution: HttpPluginExecution, auth_config: AuthConfig.nullish() });

export const SysAiPluginRow = z.object({
  plugin_id: z.union([z.int(), z.string()]).nullish(),
  name: z.string().min(1).max(256),
  title: z.string().nullish(),
  description: z.string(),
  icon_url: z.string().nullish(),
  parameter_schema: jsonColumn(JsonSchemaObject),
  execution_config: jsonColumn(z.union([NestedExecutionConfig, FlatExecutionConfig])),
  status: PluginStatusInput.nullish(),
  required_credentials: jsonColumn(z.array(CredentialName)).nullish(),
});
export type SysAiPluginRow = z.infer<typeof SysAiPluginRow>;

/** The seed 000 plugin a row stores. */
export function pluginFromRow(row: SysAiPluginRow): HttpPlugin {
  const config = row.execution_config;
  // The flat form's execution fields are the config minus auth_config, which the parse drops.
  const execution = 'execution' in config ? config.execution : HttpPluginExecution.parse(config);
  return HttpPlugin.parse({
    schema_version: 'v1',
    name: row.name,
    ...(row.title != null ? { title: row.title } : {}),
    description: row.description,
    ...(row.icon_url != null ? { icon_url: row.icon_url } : {}),
    parameters: row.parameter_schema,
    execution,
    ...(config.auth_config != null ? { auth_config: config.auth_config } : {}),
    ...(row.required_credentials != null ? { required_credentials: row.required_credentials } : {}),
    ...(row.status != null ? { status: row.status } : {}),
  });
}
