// The task payload of seed 001 (`task_meta`, `input`, `runtime_config {model, tools, vault}`) in its three
// forms:
// - ClearTaskPayload: what a trusted upstream (RuoYi mode) submits — exactly seed 001, clear vault, model key
//   in clear, seed 001 tools, trace id as a UUID if it likes.
// - ReceivedTask (`mesh.tasks.received.<account>`): what the gateway publishes; a pre-assembled submission's
//   runtime_config is already sealed and canonical here.
// - AssembledTask (`mesh.tasks.assembled.<account>`): what executors run. Its vault is sealed and its model
//   config has no api_key field at all (the key travels inside the vault as MODEL_API_KEY_VAULT_ENTRY), and the
//   bus forms are strict, so a secret in clear cannot validate on the bus.
// Delivery attempts are counted by JetStream, not written into the payload.
import { z } from 'zod';
import { AgentDigest, AgentVersionNumber, RunToolDigests } from './agent-version-number.js';
import { ChatMessage } from './chat.js';
import { IdempotencyKey, IsoDateTime, UserId, UserIdInput, WorkflowId } from './ids.js';
import { AccountId } from './names.js';
import { TaskThread } from './thread-id.js';
import { TraceId, TraceIdInput } from './trace-id.js';
import { ToolDefinition } from './tools/canonical.js';
import { FunctionName } from './tools/function-name.js';
import { HttpUrl } from './tools/http-request.js';
import { JsonObject } from './tools/json-schema.js';
import { McpServerConnection } from './tools/mcp-server.js';
import { PayloadTool } from './tools/payload-tool.js';
import { ClearVault, RESERVED_VAULT_ENTRY_PREFIX, SealedVault } from './vault.js';

export const DEFAULT_MAX_STEPS = 10;
/**
 * The OpenAI-compatible chat completions servers whose quirks the executor knows (its provider profiles:
 * how usage is asked for, whether reasoning goes back, the Azure URL and key header). `generic` is any
 * other server speaking the API and reads what every one of them sends; `openai` is OpenAI's own API.
 */
export const OPENAI_COMPATIBLE_PROVIDERS = [
  'generic',
  'openai',
  'azure-openai',
  'deepseek',
  'deepseek-r1',
  'mistral',
  'groq',
  'xai',
  'together',
  'fireworks',
  'vllm',
  'ollama',
  'lmstudio',
  'openrouter',
] as const;
export const ModelProvider = z.enum(OPENAI_COMPATIBLE_PROVIDERS);
export type ModelProvider = z.infer<typeof ModelProvider>;
export const DEFAULT_MODEL_PROVIDER: ModelProvider = 'generic';

/**
 * The wire API the executor speaks to an agent's model: `openai-chat` (chat completions, any
 * OpenAI-compatible server, shaped by `provider`), or a provider's native API: `anthropic-messages`
 * (Anthropic Messages), `gemini` (Google Gemini `streamGenerateContent`), `openai-responses` (OpenAI
 * Responses), `bedrock-converse` (Amazon Bedrock ConverseStream, SigV4-signed). Absent means `openai-chat`.
 */
export const MODEL_APIS = [
  'openai-chat',
  'anthropic-messages',
  'gemini',
  'openai-responses',
  'bedrock-converse',
] as const;
export const ModelApi = z.enum(MODEL_APIS);
export type ModelApi = z.infer<typeof ModelApi>;
export const DEFAULT_MODEL_API: ModelApi = 'openai-chat';

export const AccountType = z.string().min(1).max(64);

/**
 * Extended thinking's budget in tokens, for the APIs that take one: Anthropic Messages and Claude on
 * Bedrock Converse (`thinking: {type: "enabled", budget_tokens}`; at least 1024, and below `max_tokens`).
 * Other APIs ignore it.
 */
export const ThinkingBudgetTokens = z.int().min(1024).max(1_000_000);

/**
 * A sub-task's link to the task whose agent-tool call submitted it. The sub-task has its own trace_id (its
 * task id: status, events, SSE) but its spans join the root task's trace (`root_trace_id`).
 */
export const TaskParent = z.strictObject({
  trace_id: TraceId,
  call_id: z.string().min(1),
  /** The trace_id of the task at the top of the tree: the OpenTelemetry trace every sub-task joins. */
  root_trace_id: TraceId,
  /** 1 for a sub-task of a top-level task, 2 for its sub-task, ... */
  depth: z.int().min(1).max(32),
});
export type TaskParent = z.infer<typeof TaskParent>;

/**
 * The NATS header in which an executor hands a sub-task's TaskParent (JSON) to the gateway's trusted
 * submit subject (`mesh.gateway.submit`). Read there only: HTTP and account-confined subjects ignore it, so
 * no tenant can graft its task into another task's tree or trace.
 */
export const TASK_PARENT_HEADER = 'agentmesh-task-parent';

/** Task identity on the bus. */
export const TaskMeta = z.object({
  workflow_id: WorkflowId,
  trace_id: TraceId,
  user_id: UserId,
  account_id: AccountId,
  /** Seed 004's `x-account-type` (e.g. `user`), forwarded to tools that need it. */
  account_type: AccountType.optional(),
  submitted_at: IsoDateTime,
  /** Absolute deadline of the whole task, across redeliveries. */
  deadline: IsoDateTime.optional(),
  /** Set on a sub-task (see TaskParent). */
  parent: TaskParent.optional(),
  /**
   * The agent's version: on a received task, the version the submission pinned (`workflow_id@version`;
   * absent: the current one); on an assembled task, the version it runs, which the vault is bound to.
   */
  agent_version: AgentVersionNumber.optional(),
  /** On an assembled task: the digest of the agent version it runs (bound to the vault with it). */
  agent_digest: AgentDigest.optional(),
  /**
   * On an assembled task: the digest of each bound tool it runs (bound to the vault with it). A pinned
   * task's equal its version's `tool_digests` (the assembler refuses it otherwise).
   */
  tool_digests: RunToolDigests.optional(),
  /** Set on a task submitted with `thread_id`: it runs with the thread's history and appends its turn. */
  thread: TaskThread.optional(),
});
export type TaskMeta = z.infer<typeof TaskMeta>;

/** The OpenTelemetry trace id of a task's spans: its own trace_id, or a sub-task's root's. */
export function otelTraceIdOf(meta: Pick<TaskMeta, 'trace_id' | 'parent'>): TraceId {
  return meta.parent?.root_trace_id ?? meta.trace_id;
}

/** Seed 001 task_meta as an upstream sends it; the gateway fills in the rest from auth and its clock. */
export const ClearTaskMeta = z.object({
  workflow_id: WorkflowId,
  /** Seed 001's Java gateway sends a UUID; normalised to 32 hex. Generated by the gateway when absent. */
  trace_id: TraceIdInput.optional(),
  user_id: UserIdInput,
  account_id: AccountId.optional(),
  account_type: AccountType.optional(),
  submitted_at: IsoDateTime.optional(),
  deadline: IsoDateTime.optional(),
});
export type ClearTaskMeta = z.infer<typeof ClearTaskMeta>;

export const TaskInput = z.object({
  /** OpenAI chat history, oldest first. */
  messages: z.array(ChatMessage).min(1),
  /** Workflow variables (seed 001: `current_time`, `file_url`, ...). */
  variables: JsonObject.default({}),
});
export type TaskInput = z.infer<typeof TaskInput>;

/** `native`: OpenAI function calling; `xml`: seed 003's `<ACTION>`/`<OBSERVATION>` for models without it. */
export const ToolProtocol = z.enum(['native', 'xml']);
export type ToolProtocol = z.infer<typeof ToolProtocol>;

/**
 * Limits on one provider key, held by all executors together (NATS KV `mesh_model_limits`, keyed by a hash
 * of the key, never the key): requests in flight, requests and tokens per minute. A model call waits for
 * room (a `model_waiting` event) instead of storming the provider into 429s.
 */
export const ModelLimits = z.strictObject({
  max_concurrent: z.int().min(1).max(10_000).optional(),
  rpm: z.int().min(1).max(1_000_000).optional(),
  tpm: z.int().min(1).max(1_000_000_000).optional(),
});
export type ModelLimits = z.infer<typeof ModelLimits>;

const modelFields = {
  /**
   * Which server the model endpoint is: one of {@link OPENAI_COMPATIBLE_PROVIDERS} (its quirks), `generic`
   * when none is named. A string on the bus, so an executor that does not know a newer provider ends the
   * task with a clear error instead of failing to read it.
   */
  provider: z.string().min(1).default(DEFAULT_MODEL_PROVIDER),
  /**
   * One of {@link MODEL_APIS}; absent: `openai-chat`. No default is filled in, so a task sealed before the
   * field existed binds (and opens) as it did; a string, so an executor that does not know a newer API
   * ends the task with a clear error.
   */
  api: z.string().min(1).optional(),
  model_name: z.string().min(1),
  base_url: HttpUrl,
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.int().positive().optional(),
  /** Extended thinking's token budget (see THINKING_BUDGET_TOKENS); absent: the model does not think. */
  thinking_budget_tokens: ThinkingBudgetTokens.optional(),
  /**
   * `false`: the executor asks for the whole answer at once (for proxies and gateways in front of a provider
   * that do not stream); text and reasoning are then handed on as one delta each. Absent: streamed.
   */
  stream: z.boolean().optional(),
  tool_protocol: ToolProtocol.default('native'),
  /** Per model call. */
  timeout_ms: z.int().positive().optional(),
  /** Longest wait for the first byte of the answer (response headers); the executor's default when absent. */
  first_byte_timeout_ms: z.int().positive().optional(),
  /** Longest silence inside a streamed answer; the executor's default when absent. */
  idle_timeout_ms: z.int().positive().optional(),
  /** What every executor together may send with this model's key (see ModelLimits). */
  limits: ModelLimits.optional(),
};

/** Seed 001 `runtime_config.model`, key in clear. */
export const ModelConfig = z.object({ ...modelFields, api_key: z.string().min(1).optional() });
export type ModelConfig = z.infer<typeof ModelConfig>;

/** The model config on the bus: no api_key, and strict so one cannot be added. */
export const AssembledModelConfig = z.strictObject(modelFields);
export type AssembledModelConfig = z.infer<typeof AssembledModelConfig>;

export const TaskLimits = z.strictObject({
  /** Model round trips before the task ends with MAX_STEPS_EXCEEDED. */
  max_steps: z.int().min(1).max(1000).default(DEFAULT_MAX_STEPS),
  /**
   * Wall-clock budget of one attempt, from when an executor starts it; `task_meta.deadline` still caps it.
   * Absent: only the task deadline (if any) applies.
   */
  deadline_ms: z.int().positive().optional(),
  /**
   * Tokens (prompt + completion, every model call, across attempts) the task may use; checked between
   * model calls: the task ends with BUDGET_EXCEEDED once it has used this many.
   */
  max_total_tokens: z.int().positive().optional(),
  /** Like max_total_tokens, in US dollars by the executor's price table (ignored for unpriced models). */
  max_cost_usd: z.number().positive().optional(),
});
export type TaskLimits = z.infer<typeof TaskLimits>;

function uniqueToolNames(tools: readonly { name: string }[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  tools.forEach((tool, index) => {
    if (seen.has(tool.name)) {
      ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate tool name ${tool.name}` });
    }
    seen.add(tool.name);
  });
}

const CanonicalTools = z.array(ToolDefinition).superRefine(uniqueToolNames);

/**
 * Tools whose results may add tools to the task (seed 004 `_dynamic_tools`), by function name. Recall's
 * `recall_actions` always may; any other tool's answer is a third party's and cannot add callable tools
 * unless the agent names it here.
 */
export const DynamicToolSources = z.array(FunctionName).max(128);

export const ClearRuntimeConfig = z.object({
  model: ModelConfig,
  tools: z.array(PayloadTool).superRefine(uniqueToolNames).default([]),
  /** Extension: tools whose results may add dynamic tools (see DynamicToolSources). */
  dynamic_tool_sources: DynamicToolSources.optional(),
  vault: ClearVault.superRefine((vault, ctx) => {
    for (const name of Object.keys(vault)) {
      if (name.startsWith(RESERVED_VAULT_ENTRY_PREFIX)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `credential names starting with ${RESERVED_VAULT_ENTRY_PREFIX} are reserved`,
        });
      }
    }
  }).default({}),
});
export type ClearRuntimeConfig = z.infer<typeof ClearRuntimeConfig>;

/** Seed 001's self-contained payload, as a trusted upstream submits it. Holds secrets: never log it. */
export const ClearTaskPayload = z.object({
  task_meta: ClearTaskMeta,
  input: TaskInput,
  runtime_config: ClearRuntimeConfig,
  /** Extension: limits for this task; the gateway's defaults apply when absent. */
  limits: TaskLimits.optional(),
});
export type ClearTaskPayload = z.infer<typeof ClearTaskPayload>;
export type ClearTaskPayloadInput = z.input<typeof ClearTaskPayload>;

/** The MCP servers a task may call (its MCP tools' and recalled MCP actions' `server`), one per name. */
export const McpServerConnections = z.array(McpServerConnection).max(32).superRefine(uniqueToolNames);

/** The most models an agent may name: the first and its fallbacks. */
export const MAX_AGENT_MODELS = 8;

/**
 * A JSON Schema the task's final answer must validate against; the answer is delivered parsed in
 * `done.output`. An object schema, at most 32 KiB of JSON.
 */
export const OutputSchema = JsonObject.refine((schema) => JSON.stringify(schema).length <= 32_768, {
  message: 'the output schema is larger than 32 KiB',
});
export type OutputSchema = z.infer<typeof OutputSchema>;

export const AssembledRuntimeConfig = z.strictObject({
  model: AssembledModelConfig,
  /**
   * Models tried in order when `model` stays unavailable (429, 5xx, timeouts) after its retries; the key of
   * number i (1-based) is the vault entry `modelApiKeyVaultEntry(i)`.
   */
  fallback_models: z
    .array(AssembledModelConfig)
    .max(MAX_AGENT_MODELS - 1)
    .optional(),
  /** The final answer's JSON Schema (the agent's, or the task's when it gave one). */
  output_schema: OutputSchema.optional(),
  tools: CanonicalTools,
  dynamic_tool_sources: DynamicToolSources.optional(),
  mcp_servers: McpServerConnections.optional(),
  vault: SealedVault,
});
export type AssembledRuntimeConfig = z.infer<typeof AssembledRuntimeConfig>;

/**
 * An assembled task before its vault is sealed: every part the vault gets bound to (see `taskBinding`).
 * Sealers parse a task with it first, so the binding is computed over the values every reader parses.
 */
export const BoundTask = z.strictObject({
  task_meta: TaskMeta,
  input: TaskInput,
  runtime_config: AssembledRuntimeConfig.omit({ vault: true }),
  limits: TaskLimits,
});
export type BoundTask = z.infer<typeof BoundTask>;

/** `mesh.tasks.received.<account>`: a submitted task, before assembly. */
export const ReceivedTask = z.strictObject({
  task_meta: TaskMeta,
  input: TaskInput,
  /** Present for pre-assembled submissions (RuoYi mode): sealed by the gateway, used as is. */
  runtime_config: AssembledRuntimeConfig.optional(),
  limits: TaskLimits.optional(),
  idempotency_key: IdempotencyKey.optional(),
  /** The submitter's JSON Schema for the final answer (replaces the agent's). */
  output_schema: OutputSchema.optional(),
});
export type ReceivedTask = z.infer<typeof ReceivedTask>;

/** `mesh.tasks.assembled.<account>`: everything an executor needs, no secret in clear. */
export const AssembledTask = z.strictObject({
  task_meta: TaskMeta,
  input: TaskInput,
  runtime_config: AssembledRuntimeConfig,
  limits: TaskLimits,
});
export type AssembledTask = z.infer<typeof AssembledTask>;
