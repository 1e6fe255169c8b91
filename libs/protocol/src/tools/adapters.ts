// Conversions between each seed's tool format and the canonical ToolDefinition. Inputs are values already
// parsed by the seed's schema. Seed → canonical → seed gives back what went in, with these normalisations:
// seed 000 always gets `schema_version: "v1"` and status as a word; seed 001 writes a native class as `class`
// and a single header API key in its short form; seed 003 gets an empty `parameters` object when it had none.
// Canonical-only fields a target format cannot hold (title, status, ... in seed 001) are dropped on the way out.
import type { DynamicToolDefinition, HttpTool, NativeTool, ScriptTool } from './canonical.js';
import type { DynamicTool } from './dynamic-tool.js';
import type { AuthConfig } from './http-auth.js';
import type { HttpPlugin } from './http-plugin.js';
import type { PayloadAuthConfig, PayloadTool } from './payload-tool.js';
import type { ToolJson } from './tool-json.js';
import type { ToolOrigin } from './canonical.js';
import { isShortAuthConfig } from './payload-tool.js';
import { emptyParameters } from './json-schema.js';
import { toFunctionName } from './function-name.js';

/** Drops keys whose value is undefined, so optional fields stay absent rather than present-but-undefined. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** The tool's id in its source format, as long as `origin` still describes the tool's current name. */
function sourceId(tool: { name: string; origin?: ToolOrigin | undefined }): string {
  const id = tool.origin?.id;
  return id !== undefined && toFunctionName(id) === tool.name ? id : tool.name;
}

// ---- seed 000: HTTP plugin JSON ----

export function fromHttpPlugin(plugin: HttpPlugin): HttpTool {
  const { execution } = plugin;
  return defined({
    type: 'HTTP',
    name: toFunctionName(plugin.name),
    description: plugin.description,
    parameters: plugin.parameters,
    origin: { format: 'http-plugin', id: plugin.name },
    title: plugin.title,
    icon_url: plugin.icon_url,
    status: plugin.status,
    execution: defined({
      method: execution.method,
      url: execution.base_url,
      content_type: execution.content_type,
      param_placement: execution.param_placement,
      argument_locations: execution.argument_locations,
      context_params: execution.context_params,
    }),
    auth: plugin.auth_config,
    required_credentials: plugin.required_credentials,
    timeout_ms: execution.timeout_ms,
  });
}

export function toHttpPlugin(tool: HttpTool): HttpPlugin {
  const { execution } = tool;
  return defined({
    schema_version: 'v1',
    name: sourceId(tool),
    title: tool.title,
    description: tool.description,
    icon_url: tool.icon_url,
    parameters: tool.parameters,
    execution: defined({
      method: execution.method,
      base_url: execution.url,
      content_type: execution.content_type,
      param_placement: execution.param_placement,
      timeout_ms: tool.timeout_ms,
      argument_locations: execution.argument_locations,
      context_params: execution.context_params,
    }),
    auth_config: tool.auth,
    required_credentials: tool.required_credentials,
    status: tool.status,
  });
}

// ---- seed 001: runtime_config.tools[] entries ----

function fromPayloadAuth(auth: PayloadAuthConfig): AuthConfig {
  if (!isShortAuthConfig(auth)) return auth;
  return {
    type: 'api_key',
    mapping: [{ source: auth.source, target: auth.target, location: auth.location ?? 'header' }],
  };
}

function toPayloadAuth(auth: AuthConfig): PayloadAuthConfig {
  const [only, ...more] = auth.type === 'api_key' ? auth.mapping : [];
  if (only !== undefined && more.length === 0 && only.location === 'header') {
    return { source: only.source, target: only.target };
  }
  return auth;
}

export function fromPayloadTool(tool: PayloadTool): HttpTool | NativeTool {
  const common = {
    name: toFunctionName(tool.name),
    description: tool.description,
    parameters: tool.parameter_schema,
    origin: { format: 'payload-tool', id: tool.name },
  } as const;
  if (tool.type === 'NATIVE') {
    const className = tool.execution_config.class_name ?? tool.execution_config.class;
    // NativeExecutionConfig guarantees one of the two; this only guards a caller that skipped parsing.
    if (className === undefined) throw new TypeError(`native tool ${tool.name} has no class or class_name`);
    return { type: 'NATIVE', ...common, class_name: className };
  }
  const config = tool.execution_config;
  return defined({
    type: 'HTTP',
    ...common,
    execution: defined({
      method: config.method,
      url: config.url,
      content_type: config.content_type,
      param_placement: config.param_placement,
      argument_locations: config.argument_locations,
      context_params: config.context_params,
    }),
    auth: config.auth_config === undefined ? undefined : fromPayloadAuth(config.auth_config),
    timeout_ms: config.timeout_ms,
  });
}

export function toPayloadTool(tool: HttpTool | NativeTool): PayloadTool {
  const common = { name: sourceId(tool), description: tool.description, parameter_schema: tool.parameters };
  if (tool.type === 'NATIVE') {
    return { type: 'NATIVE', ...common, execution_config: { class: tool.class_name } };
  }
  const { execution } = tool;
  return {
    type: 'HTTP',
    ...common,
    execution_config: defined({
      url: execution.url,
      method: execution.method,
      auth_config: tool.auth === undefined ? undefined : toPayloadAuth(tool.auth),
      content_type: execution.content_type,
      param_placement: execution.param_placement,
      timeout_ms: tool.timeout_ms,
      argument_locations: execution.argument_locations,
      context_params: execution.context_params,
    }),
  };
}

// ---- seed 003: *.tool.json ----

export function fromToolJson(metadata: ToolJson): ScriptTool {
  const { handler, securityContext: security } = metadata;
  return defined({
    type: 'SCRIPT',
    name: toFunctionName(metadata.toolId),
    description: metadata.description,
    parameters: metadata.parameters ?? emptyParameters(),
    origin: { format: 'tool-json', id: metadata.toolId },
    tool_id: metadata.toolId,
    display_name: metadata.displayName,
    version: metadata.version,
    handler:
      handler.type === 'external-script'
        ? defined({
            type: handler.type,
            script_path: handler.scriptPath,
            language: handler.language,
            entry_point: handler.entryPoint,
          })
        : { type: handler.type, service_name: handler.serviceName, method_name: handler.methodName },
    output: metadata.output,
    security_context:
      security === undefined
        ? undefined
        : defined({
            file_access:
              security.fileAccess === undefined
                ? undefined
                : defined({
                    allow_read: security.fileAccess.allowRead,
                    allow_write: security.fileAccess.allowWrite,
                  }),
            network_access:
              security.networkAccess === undefined
                ? undefined
                : defined({ allow_hosts: security.networkAccess.allowHosts }),
            required_capabilities: security.requiredCapabilities,
          }),
    examples: metadata.examples?.map((example) =>
      defined({
        description: example.description,
        input: example.input,
        expected_output: example.expectedOutput,
      }),
    ),
    tags: metadata.tags,
    timeout_ms: metadata.timeoutMs,
  });
}

export function toToolJson(tool: ScriptTool): ToolJson {
  const { handler, security_context: security } = tool;
  return defined({
    toolId: tool.tool_id,
    displayName: tool.display_name,
    description: tool.description,
    version: tool.version,
    handler:
      handler.type === 'external-script'
        ? defined({
            type: handler.type,
            scriptPath: handler.script_path,
            language: handler.language,
            entryPoint: handler.entry_point,
          })
        : { type: handler.type, serviceName: handler.service_name, methodName: handler.method_name },
    parameters: tool.parameters,
    output: tool.output,
    securityContext:
      security === undefined
        ? undefined
        : defined({
            fileAccess:
              security.file_access === undefined
                ? undefined
                : defined({
                    allowRead: security.file_access.allow_read,
                    allowWrite: security.file_access.allow_write,
                  }),
            networkAccess:
              security.network_access === undefined
                ? undefined
                : defined({ allowHosts: security.network_access.allow_hosts }),
            requiredCapabilities: security.required_capabilities,
          }),
    examples: tool.examples?.map((example) =>
      defined({
        description: example.description,
        input: example.input,
        expectedOutput: example.expected_output,
      }),
    ),
    tags: tool.tags,
    timeoutMs: tool.timeout_ms,
  });
}

// ---- seed 004: _dynamic_tools[] entries ----

export function fromDynamicTool(tool: DynamicTool): DynamicToolDefinition {
  return defined({
    type: 'DYNAMIC',
    name: toFunctionName(tool.name),
    description: tool.description,
    parameters: tool.parameters,
    origin: { format: 'dynamic-tool', id: tool.name },
    api_url: tool.api_url,
    original_schema: tool.original_schema,
    fixed_params: tool.fixed_params,
    action_id: tool.action_id,
  });
}

export function toDynamicTool(tool: DynamicToolDefinition): DynamicTool {
  return defined({
    name: sourceId(tool),
    description: tool.description,
    parameters: tool.parameters,
    api_url: tool.api_url,
    original_schema: tool.original_schema,
    fixed_params: tool.fixed_params,
    action_id: tool.action_id,
  });
}
