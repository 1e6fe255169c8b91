// Builders for the tools and tasks the executor's tests run. Plain data, no test-kit imports.
import {
  AssembledTask,
  type AssembledModelConfig,
  type AssembledRuntimeConfig,
  BoundTask,
  type ClearVault,
  type HttpTool,
  type McpServerConnection,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { sealTask, type SealFor } from '@agentmesh/vault';

/** A GET tool on `<origin>/<path>` taking `{q: string}` in the query, authenticated by an api key header. */
export function searchTool(origin: string, name = 'search', path = `/${name}`): HttpTool {
  return {
    type: 'HTTP',
    name,
    description: `searches ${name}`,
    parameters: {
      type: 'object',
      properties: { q: { type: 'string', description: 'what to look for' } },
      required: ['q'],
      additionalProperties: false,
    },
    execution: { method: 'GET', url: `${origin}${path}`, param_placement: 'query' },
    auth: { type: 'api_key', mapping: [{ source: 'SEARCH_KEY', target: 'X-Api-Key', location: 'header' }] },
  };
}

export interface AssembledTaskOptions {
  traceId: string;
  accountId: string;
  modelBaseUrl: string;
  /** The model's provider profile; `openai` by default. */
  provider?: string;
  /** The model's wire API (`runtime_config.model.api`); none by default (chat completions). */
  api?: string;
  /** `scripted-model` by default. */
  modelName?: string;
  /** The task's credentials, sealed into its vault for `sealFor` as the assembler would. */
  secrets: ClearVault;
  sealFor: SealFor;
  userMessage: string;
  accountType?: string;
  /** `user-1` by default. */
  userId?: string;
  tools?: ToolDefinition[];
  /** The MCP servers the task may call (`runtime_config.mcp_servers`). */
  mcpServers?: McpServerConnection[];
  maxSteps?: number;
  deadlineMs?: number;
  /** The task's token and cost budget (limits.max_total_tokens / max_cost_usd). */
  budget?: { max_total_tokens?: number; max_cost_usd?: number };
  /** Seed 001 `input.variables`; none by default. */
  variables?: Record<string, string | number | boolean>;
  systemPrompt?: string;
  /** The agent version the assembler stamped on the task (task_meta.agent_version / agent_digest). */
  agentVersion?: { version: number; digest: string };
  /** Fields of the first model's config beside the defaults here (timeouts, limits, another name). */
  model?: Partial<AssembledModelConfig>;
  /** Fallback models and the output schema (`runtime_config.fallback_models` / `output_schema`). */
  runtimeConfig?: Pick<AssembledRuntimeConfig, 'fallback_models' | 'output_schema'>;
}

/** A task as the assembler publishes it: its vault sealed for the executors and bound to the task. */
export function assembledTask(options: AssembledTaskOptions): AssembledTask {
  const bound = BoundTask.parse({
    task_meta: {
      workflow_id: 'test_agent',
      trace_id: options.traceId,
      user_id: options.userId ?? 'user-1',
      account_id: options.accountId,
      ...(options.accountType === undefined ? {} : { account_type: options.accountType }),
      submitted_at: new Date().toISOString(),
      ...(options.agentVersion && {
        agent_version: options.agentVersion.version,
        agent_digest: options.agentVersion.digest,
      }),
    },
    input: {
      messages: [
        { role: 'system', content: options.systemPrompt ?? 'You are a test agent.' },
        { role: 'user', content: options.userMessage },
      ],
      variables: options.variables ?? {},
    },
    runtime_config: {
      model: {
        provider: options.provider ?? 'openai',
        ...(options.api === undefined ? {} : { api: options.api }),
        model_name: options.modelName ?? 'scripted-model',
        base_url: options.modelBaseUrl,
        tool_protocol: 'native',
        ...options.model,
      },
      ...options.runtimeConfig,
      tools: options.tools ?? [],
      ...(options.mcpServers === undefined ? {} : { mcp_servers: options.mcpServers }),
    },
    limits: {
      max_steps: options.maxSteps ?? 5,
      ...(options.deadlineMs === undefined ? {} : { deadline_ms: options.deadlineMs }),
      ...options.budget,
    },
  });
  return AssembledTask.parse(sealTask(bound, options.secrets, options.sealFor));
}
