// An agent (seed 001 "workflow"), as kept in KV `mesh_agents` under its workflow_id: what the assembler needs
// to turn a submitted task into a runnable one. Holds no secret: the model key is named, not included.
import { z } from 'zod';
import { WorkflowId } from './ids.js';
import {
  DEFAULT_MAX_STEPS,
  DEFAULT_MODEL_PROVIDER,
  DynamicToolSources,
  ModelApi,
  MAX_AGENT_MODELS,
  ModelLimits,
  ModelProvider,
  OutputSchema,
  ThinkingBudgetTokens,
  ToolProtocol,
} from './task.js';
import { ToolApprovals } from './tools/approval-policy.js';
import { CredentialName } from './tools/http-auth.js';
import { HttpUrl } from './tools/http-request.js';
import { McpServerName } from './tools/mcp-server.js';

/** Strict: a key in clear must be refused, not silently dropped or stored in KV. */
export const AgentModel = z.strictObject({
  /** Which OpenAI-compatible server `base_url` is, for its quirks (see OPENAI_COMPATIBLE_PROVIDERS). */
  provider: ModelProvider.default(DEFAULT_MODEL_PROVIDER),
  /** The wire API of the model (see MODEL_APIS); absent: `openai-chat`, the only one `provider` shapes. */
  api: ModelApi.optional(),
  model_name: z.string().min(1),
  base_url: HttpUrl,
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.int().positive().optional(),
  /** Extended thinking's budget (Anthropic Messages, Claude on Bedrock); absent: no extended thinking. */
  thinking_budget_tokens: ThinkingBudgetTokens.optional(),
  /** `false`: ask for the whole answer at once (for proxies and gateways that do not stream); absent: streamed. */
  stream: z.boolean().optional(),
  tool_protocol: ToolProtocol.optional(),
  timeout_ms: z.int().positive().optional(),
  first_byte_timeout_ms: z.int().positive().optional(),
  idle_timeout_ms: z.int().positive().optional(),
  /** Limits on this model's key shared by every executor (see ModelLimits). */
  limits: ModelLimits.optional(),
  /** Name of the user's credential that holds the model's API key; none for keyless endpoints. */
  api_key_credential: CredentialName.optional(),
});
export type AgentModel = z.infer<typeof AgentModel>;

/** One model, or an ordered list: the first answers, the next ones take over when it stays unavailable. */
export const AgentModels = z.union([AgentModel, z.array(AgentModel).min(1).max(MAX_AGENT_MODELS)]);
export type AgentModels = z.infer<typeof AgentModels>;

/** An agent's models in order of preference (a single model is a list of one). */
export function agentModels(agent: { model: AgentModels }): AgentModel[] {
  return Array.isArray(agent.model) ? agent.model : [agent.model];
}

export const AgentDefinition = z.object({
  workflow_id: WorkflowId,
  name: z.string().min(1).optional(),
  description: z.string().optional(),
  /** Prepended to the task's messages as a system message. */
  system_prompt: z.string().optional(),
  model: AgentModels,
  /** A JSON Schema the final answer must validate against; delivered parsed in `done.output`. */
  output_schema: OutputSchema.optional(),
  /** Bound tools, by canonical tool name. */
  tools: z.array(z.string().min(1)).default([]),
  /**
   * Bound tools whose results may add dynamic tools to a run (seed 004 `_dynamic_tools`); recall's
   * `recall_actions` always may. A third-party API answering with `_dynamic_tools` adds nothing otherwise.
   */
  dynamic_tool_sources: DynamicToolSources.optional(),
  /**
   * Bound MCP servers, by registry name: their tools (as `tools/list` answers, filtered and prefixed by the
   * definition) join the agent's tools, and recalled MCP actions may call them.
   */
  mcp_servers: z.array(McpServerName).max(32).optional(),
  /**
   * Approval rules of the agent's bound tools, by the name the model calls (tool, MCP tool or sub-agent).
   * They add to a tool's own policy; they cannot waive it.
   */
  tool_approvals: ToolApprovals.optional(),
  /**
   * Other agents of the account this agent may call as tools, by workflow_id. Each becomes a tool named
   * `agent_<workflow_id>` (function-name safe) taking `{input}`; a call runs a sub-task.
   */
  sub_agents: z.array(WorkflowId).max(32).optional(),
  max_steps: z.int().min(1).max(1000).default(DEFAULT_MAX_STEPS),
  /** Wall-clock budget of one run (see TaskLimits.deadline_ms). */
  deadline_ms: z.int().positive().optional(),
  /** Token budget of a task of this agent (see TaskLimits.max_total_tokens); with a submitted one, the smaller applies. */
  max_total_tokens: z.int().positive().optional(),
  /** Cost budget of a task of this agent (see TaskLimits.max_cost_usd); with a submitted one, the smaller applies. */
  max_cost_usd: z.number().positive().optional(),
});
export type AgentDefinition = z.infer<typeof AgentDefinition>;
export type AgentDefinitionInput = z.input<typeof AgentDefinition>;
