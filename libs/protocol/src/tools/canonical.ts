// The one tool definition the mesh stores (KV `mesh_tools`) and ships to executors, whatever format the tool
// came in. A discriminated union on `type`. Every member has a legal
// OpenAI function `name`, a `description` and an object `parameters` schema: the part the model sees.
// `origin` records the source format and its original id, so adapters can write the tool back exactly.
import { z } from 'zod';
import { WorkflowId } from '../ids.js';
import { AuthConfig, CredentialName } from './http-auth.js';
import { ContextParams } from './context-params.js';
import {
  ArgumentLocation,
  HttpMethod,
  HttpUrl,
  HttpUrlTemplate,
  OpenApiRequestTemplate,
  ParamPlacement,
} from './http-request.js';
import { FixedParams } from './dynamic-tool.js';
import { ApprovalPolicy } from './approval-policy.js';
import { A2aAuth, a2aMessageParameters } from './a2a-tool.js';
import { FunctionName } from './function-name.js';
import { JsonObject, JsonSchema, JsonSchemaObject } from './json-schema.js';
import { McpServerName } from './mcp-server.js';
import { PluginStatus } from './http-plugin.js';
import { ScriptLanguage } from './tool-json.js';

export const ToolType = {
  HTTP: 'HTTP',
  NATIVE: 'NATIVE',
  SCRIPT: 'SCRIPT',
  DYNAMIC: 'DYNAMIC',
  MCP: 'MCP',
  /** Another agent of the account, run as a sub-task; its final answer is the result. */
  AGENT: 'AGENT',
  /** A remote A2A agent, by its Agent Card URL; a call is one A2A task, its artifacts the result. */
  A2A: 'A2A',
} as const;
export type ToolType = (typeof ToolType)[keyof typeof ToolType];

export const ToolFormat = {
  /** Seed 000 plugin JSON. */
  HTTP_PLUGIN: 'http-plugin',
  /** Seed 001 `runtime_config.tools[]` entry. */
  PAYLOAD_TOOL: 'payload-tool',
  /** Seed 003 `*.tool.json`. */
  TOOL_JSON: 'tool-json',
  /** Seed 004 `_dynamic_tools[]` entry. */
  DYNAMIC_TOOL: 'dynamic-tool',
  /** Registered from code by an executor (seed 002). */
  NATIVE: 'native',
  /** Imported from an OpenAPI operation. */
  OPENAPI: 'openapi',
  /** Listed by an MCP server (`tools/list`). */
  MCP: 'mcp',
} as const;
export type ToolFormat = (typeof ToolFormat)[keyof typeof ToolFormat];

export const ToolOrigin = z.object({
  format: z.enum(ToolFormat),
  /** The tool's id in its source format (plugin name, toolId, operationId, ...). */
  id: z.string().min(1),
});
export type ToolOrigin = z.infer<typeof ToolOrigin>;

const ToolCommon = {
  name: FunctionName,
  description: z.string(),
  parameters: JsonSchemaObject,
  origin: ToolOrigin.optional(),
  /** Calls of the tool wait for a person's approval (always, or when a rule on the arguments matches). */
  approval: ApprovalPolicy.optional(),
};

export const HttpToolExecution = z.object({
  method: HttpMethod,
  url: HttpUrlTemplate,
  content_type: z.string().min(1).optional(),
  /** Where the arguments go when `argument_locations` does not say; GET/DELETE → query, others → body. */
  param_placement: ParamPlacement.optional(),
  argument_locations: z.record(z.string(), ArgumentLocation).optional(),
  /** Set for tools imported from an OpenAPI document: it decides where each argument goes. */
  request_template: OpenApiRequestTemplate.optional(),
  /** Values of the task (user_id, variables, ...) the executor puts into the request; never the model's. */
  context_params: ContextParams.optional(),
});
export type HttpToolExecution = z.infer<typeof HttpToolExecution>;

export const HttpTool = z.object({
  type: z.literal(ToolType.HTTP),
  ...ToolCommon,
  title: z.string().optional(),
  icon_url: z.string().optional(),
  /** Absent means enabled. */
  status: PluginStatus.optional(),
  execution: HttpToolExecution,
  auth: AuthConfig.optional(),
  required_credentials: z.array(CredentialName).optional(),
  timeout_ms: z.int().positive().optional(),
});
export type HttpTool = z.infer<typeof HttpTool>;

export const NativeTool = z.object({
  type: z.literal(ToolType.NATIVE),
  ...ToolCommon,
  /** The executor's registered implementation (seed 002 `class_name`). */
  class_name: z.string().min(1),
});
export type NativeTool = z.infer<typeof NativeTool>;

export const ScriptHandler = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('external-script'),
    script_path: z.string().min(1),
    language: ScriptLanguage,
    entry_point: z.string().min(1).optional(),
  }),
  z.object({
    type: z.literal('service-method'),
    service_name: z.string().min(1),
    method_name: z.string().min(1),
  }),
]);
export type ScriptHandler = z.infer<typeof ScriptHandler>;

export const ScriptSecurityContext = z.object({
  file_access: z
    .object({ allow_read: z.array(z.string()).optional(), allow_write: z.array(z.string()).optional() })
    .optional(),
  network_access: z.object({ allow_hosts: z.array(z.string()).optional() }).optional(),
  required_capabilities: z.array(z.string()).optional(),
});
export type ScriptSecurityContext = z.infer<typeof ScriptSecurityContext>;

export const ScriptExample = z.object({
  description: z.string().optional(),
  input: JsonObject,
  expected_output: z.unknown().optional(),
});

/** A seed 003 direct-service tool (sandboxed script or service method). */
export const ScriptTool = z.object({
  type: z.literal(ToolType.SCRIPT),
  ...ToolCommon,
  /** Seed 003 `toolId`, e.g. `core:execute-python-script` (`name` is its legal function-name form). */
  tool_id: z.string().min(1),
  display_name: z.string().min(1),
  version: z.string().min(1),
  handler: ScriptHandler,
  output: JsonSchema.optional(),
  security_context: ScriptSecurityContext.optional(),
  examples: z.array(ScriptExample).optional(),
  tags: z.array(z.string()).optional(),
  /** How long one call may run, in ms; the executor's default when absent, capped by its maximum. */
  timeout_ms: z.int().positive().optional(),
});
export type ScriptTool = z.infer<typeof ScriptTool>;

/** A seed 004 tool found by action recall, called through the tool box proxy. */
export const DynamicToolDefinition = z.object({
  type: z.literal(ToolType.DYNAMIC),
  ...ToolCommon,
  api_url: HttpUrlTemplate,
  original_schema: JsonObject,
  fixed_params: FixedParams,
  action_id: z.string().min(1).optional(),
});
export type DynamicToolDefinition = z.infer<typeof DynamicToolDefinition>;

/**
 * A tool of an MCP server, called with `tools/call`. `server` names one of the task's
 * `runtime_config.mcp_servers` (how to connect, which credentials); `parameters` is the tool's MCP
 * `inputSchema` (less the fixed arguments of a recalled action).
 */
export const McpTool = z.object({
  type: z.literal(ToolType.MCP),
  ...ToolCommon,
  server: McpServerName,
  /** The tool's name on the server (`name` is the prefixed, legal function name the model sees). */
  tool_name: z.string().min(1),
  /** Arguments a recalled action fixed; they win over the model's. */
  fixed_arguments: JsonObject.optional(),
  action_id: z.string().min(1).optional(),
  timeout_ms: z.int().positive().optional(),
});
export type McpTool = z.infer<typeof McpTool>;

/**
 * Another agent of the same account, called as a tool: the call submits a sub-task (same user, same trace,
 * linked to the calling task) and its final answer is the result. Made by the assembler from an agent's
 * `sub_agents`; not stored in the tool registry.
 */
export const AgentTool = z.object({
  type: z.literal(ToolType.AGENT),
  ...ToolCommon,
  /** The agent the sub-task runs. */
  workflow_id: WorkflowId,
});
export type AgentTool = z.infer<typeof AgentTool>;

/**
 * A remote A2A agent (see a2a-tool.ts), stored in the tool registry and bound by name. `description` and
 * `parameters` are what the model sees when the card cannot be read; the executor describes the tool from
 * the card (its skill, when `skill` names one) at the start of each task.
 */
export const A2aTool = z.object({
  type: z.literal(ToolType.A2A),
  ...ToolCommon,
  description: z.string().default(''),
  parameters: JsonSchemaObject.default(a2aMessageParameters()),
  /** The Agent Card's URL (e.g. `https://agents.example/.well-known/agent-card.json`). */
  card_url: HttpUrl,
  /** A skill id of the card: the tool is described by that skill, and the id travels in the message's metadata. */
  skill: z.string().min(1).max(256).optional(),
  auth: A2aAuth.optional(),
  /** How long one call may run, in ms; the executor's default when absent. */
  timeout_ms: z.int().positive().optional(),
});
export type A2aTool = z.infer<typeof A2aTool>;

export const ToolDefinition = z.discriminatedUnion('type', [
  HttpTool,
  NativeTool,
  ScriptTool,
  DynamicToolDefinition,
  McpTool,
  AgentTool,
  A2aTool,
]);
export type ToolDefinition = z.infer<typeof ToolDefinition>;
