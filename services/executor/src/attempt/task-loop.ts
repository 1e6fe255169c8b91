/**
 * The agent loop as one task attempt runs it: the task's models (its fallback list, each with its key from
 * the vault, behind one ChatModel), its tools (assembled ones, its MCP servers' and sub-agents), its
 * conversation and limits, and the check an attempt makes before each call after the executor stood still.
 */
import {
  ErrorCode,
  MODEL_APIS,
  OPENAI_COMPATIBLE_PROVIDERS,
  modelApiKeyVaultEntry,
  type AssembledTask,
  type ChatMessage,
  type ClearVault,
  type McpServerConnection,
  type ToolDefinition,
} from '@agentmesh/protocol';
import {
  runAgentLoop,
  type AgentTask,
  type ChatModel,
  type LoopOutcome,
  type LoopResult,
} from '../agent-loop.js';
import { ownershipLost } from '../attempt-status.js';
import type { TaskSpend } from '../budget/task-spend.js';
import type { TaskMetrics } from '../executor-metrics.js';
import { isKnownApi, isKnownProvider } from '../llm/index.js';
import { FallbackModel, type ModelChoice } from '../model-choice/fallback-model.js';
import { keyIdOf } from '../model-choice/shared-key-limits.js';
import { renderVariables } from '../prompt-variables.js';
import type { ResumePoint } from '../resume/resume-point.js';
import type { SecretScrubber } from '../secrets/index.js';
import type { TaskAbort } from '../task-abort.js';
import type { TaskEventSink } from '../task-event-sink.js';
import type { TaskSlot } from '../task-slot.js';
import type { TaskAccount, TaskContextValues } from '../tools/index.js';
import { toolExecutor } from '../tools/tool-dispatch.js';
import { ToolCallError } from '../tools/tool-errors.js';
import { SubtaskFanOut } from '../tools/sub-agent/index.js';
import { describeA2aTools, RemoteInputRequests } from '../tools/a2a/index.js';
import { XmlToolProtocolModel } from '../xml-protocol/index.js';
import { failure } from './attempt-lifecycle.js';
import type { TaskRunnerDependencies } from './runner-dependencies.js';

const DEFAULT_MAX_SUBTASKS_PER_TASK = 8;

export class TaskLoop {
  constructor(private readonly deps: TaskRunnerDependencies) {}

  /**
   * The loop's `beforeCall`: nothing to do (no promise) unless the executor stalled since the attempt last
   * looked (heartbeat-clock.ts). Then the attempt reads its task's status record once, and stops (before
   * the call) when another attempt took the task over or it ended meanwhile: a woken executor would
   * otherwise ask the model once more before its next event write was refused.
   */
  ownershipCheck(
    task: AssembledTask,
    attempt: number,
    abort: TaskAbort,
  ): (() => Promise<void> | undefined) | undefined {
    const clock = this.deps.clock;
    if (clock === undefined) return undefined;
    const { account_id: accountId, trace_id: traceId } = task.task_meta;
    let seen = clock.stalls();
    return () => {
      const stalls = clock.stalls();
      if (stalls === seen) return undefined;
      seen = stalls;
      return (async () => {
        try {
          const record = await this.deps.statuses.get(accountId, traceId);
          if (ownershipLost(record, attempt, this.deps.owners?.instance)) {
            this.deps.log.warn(
              { attempt, now_attempt: record?.attempt, status: record?.status },
              'the executor stood still and lost the task to another attempt; stopping before its next call',
            );
            abort.loseOwnership();
          }
        } catch (error) {
          // The event stream's fence still stops a stale attempt at its next write.
          this.deps.log.warn({ err: error }, 'could not check whether this attempt still owns its task');
        }
      })();
    };
  }

  /** The agent loop with this task's model, tools and vault; a bug inside it ends the task as INTERNAL. */
  async run(
    task: AssembledTask,
    {
      vault,
      secrets,
      deadline,
      beforeCall,
      slot,
    }: {
      vault: ClearVault;
      secrets: SecretScrubber;
      deadline: number | undefined;
      beforeCall: (() => Promise<void> | undefined) | undefined;
      /** Lent out while a sub-agent call waits for its sub-task. */
      slot: TaskSlot;
    },
    sink: TaskEventSink,
    signal: AbortSignal,
    metrics: TaskMetrics,
    resume: ResumePoint | undefined,
    spend: TaskSpend,
    onConversation?: (read: () => readonly ChatMessage[]) => void,
  ): Promise<LoopResult> {
    const mcpServers = task.runtime_config.mcp_servers ?? [];
    let tools = task.runtime_config.tools;
    if (mcpServers.length > 0) {
      const listed = await this.#mcpTools(task, mcpServers, { vault, secrets });
      if ('failure' in listed) return listed.failure;
      tools = [...tools, ...listed.tools];
    }
    tools = await describeA2aTools(
      tools,
      this.deps.tools.a2a,
      { vault, account: accountOf(task).id, scrubber: secrets },
      this.deps.log,
    );
    const model = task.runtime_config.model;
    const client = this.#models(task, vault, tools, resume, sink);
    const agentTask: AgentTask = {
      conversationId: task.task_meta.trace_id,
      model: {
        name: model.model_name,
        ...(model.temperature === undefined ? {} : { temperature: model.temperature }),
        ...(model.max_tokens === undefined ? {} : { max_tokens: model.max_tokens }),
      },
      messages: renderVariables(task.input.messages, task.input.variables),
      tools,
      maxSteps: task.limits.max_steps,
      ...(task.runtime_config.dynamic_tool_sources === undefined
        ? {}
        : { dynamicToolSources: task.runtime_config.dynamic_tool_sources }),
      ...(resume === undefined ? {} : { resume }),
      spend,
      budget: task.limits,
      ...(task.runtime_config.output_schema === undefined
        ? {}
        : { outputSchema: task.runtime_config.output_schema }),
    };
    try {
      return await runAgentLoop(
        agentTask,
        {
          model: client,
          executeTool: toolExecutor(this.deps.tools, {
            vault,
            account: accountOf(task),
            secrets,
            context: toolContextOf(task),
            mcpServers,
            ...(resume === undefined ? {} : { remoteTasks: resume.remoteTaskIds }),
            remoteInputs: new RemoteInputRequests(resume?.remoteInputs),
            subtasks: {
              meta: task.task_meta,
              ...(deadline === undefined ? {} : { deadline }),
              fanOut: new SubtaskFanOut(
                this.deps.maxSubtasksPerTask ?? DEFAULT_MAX_SUBTASKS_PER_TASK,
                resume?.subtaskCallIds,
              ),
              emit: sink.emit,
              slot,
            },
          }),
          emit: sink.emit,
          emitDurably: sink.emitDurably,
          // The thread's turn holds the task's own messages, not the output-schema instruction the loop adds.
          ...(onConversation === undefined
            ? {}
            : {
                onConversation: (live: readonly ChatMessage[], openingLength: number) =>
                  onConversation(() => [...agentTask.messages, ...live.slice(openingLength)]),
              }),
          backpressure: sink.backpressure,
          ...(this.deps.toolArgsStreamMinChars === undefined
            ? {}
            : { toolArgsStreamMinChars: this.deps.toolArgsStreamMinChars }),
          onToolCrash: (error, tool) =>
            this.deps.log.error({ err: error, tool: tool.name }, 'tool runner threw'),
          onDynamicTools: (change, tool) => {
            const { added, replaced, rejected } = change;
            if (added.length > 0 || replaced.length > 0) {
              this.deps.log.info({ tool, added, replaced }, 'dynamic tools joined the task');
            }
            if (rejected.length > 0) this.deps.log.warn({ tool, rejected }, 'dynamic tools rejected');
          },
          metrics,
          ...(beforeCall === undefined ? {} : { beforeCall }),
          // Without a store to park in, calls needing approval are refused (a tool error), never run.
          ...(this.deps.parkedTasks === undefined ? {} : { parking: true as const }),
        },
        signal,
      );
    } catch (error) {
      this.deps.log.error({ err: error }, 'agent loop failed');
      return failure(ErrorCode.INTERNAL, 'the executor failed while running the task');
    }
  }

  /**
   * The task's models as one (model-choice/fallback-model.ts): the first, then its fallbacks, each with its
   * own key from the vault and its key's shared limits; a resumed task starts with the model its log says
   * answered last.
   */
  #models(
    task: AssembledTask,
    vault: ClearVault,
    tools: readonly ToolDefinition[],
    resume: ResumePoint | undefined,
    sink: TaskEventSink,
  ): ChatModel {
    const models = [task.runtime_config.model, ...(task.runtime_config.fallback_models ?? [])];
    const choices = models.map((model, index): ModelChoice => {
      const apiKey = vault[modelApiKeyVaultEntry(index)];
      const firstByte = model.first_byte_timeout_ms ?? this.deps.firstByteTimeoutMs;
      const idle = model.idle_timeout_ms ?? this.deps.idleTimeoutMs;
      const chatClient = this.deps.createModel({
        ...(model.api === undefined ? {} : { api: model.api }),
        provider: model.provider,
        baseUrl: model.base_url,
        timeoutMs: model.timeout_ms ?? this.deps.llmTimeoutMs,
        ...(firstByte === undefined ? {} : { firstByteTimeoutMs: firstByte }),
        ...(idle === undefined ? {} : { idleTimeoutMs: idle }),
        ...(model.stream === undefined ? {} : { stream: model.stream }),
        ...(apiKey ? { apiKey } : {}),
      });
      // Models without native function calling speak seed 003's <ACTION>/<OBSERVATION>; the adapter
      // keeps the loop (and so the event stream) the same as with function calling.
      const client =
        model.tool_protocol === 'xml' ? new XmlToolProtocolModel(chatClient, { tools }) : chatClient;
      return {
        name: model.model_name,
        ...(model.temperature === undefined ? {} : { temperature: model.temperature }),
        ...(model.max_tokens === undefined ? {} : { max_tokens: model.max_tokens }),
        ...(model.thinking_budget_tokens === undefined
          ? {}
          : { thinking_budget_tokens: model.thinking_budget_tokens }),
        client,
        ...(model.limits === undefined
          ? {}
          : { limits: { keyId: keyIdOf(apiKey, model.base_url), limits: model.limits } }),
      };
    });
    return new FallbackModel(choices, {
      ...(resume?.lastModelIndex === undefined ? {} : { startAt: resume.lastModelIndex }),
      ...(this.deps.keyLimits === undefined ? {} : { keyLimits: this.deps.keyLimits }),
      onWaiting: ({ model, limit, value }) =>
        sink.emit({ type: 'model_waiting', data: { model, limit, value } }),
      onFallback: (from, error) =>
        this.deps.log.warn(
          { model: from.model, model_index: from.index, err: error },
          'model unavailable after its retries; the next model of the agent takes the turn',
        ),
    });
  }

  /**
   * The tools of the task's MCP servers (listed by this executor: through its SSRF guard, stdio ones in the
   * sandbox), after the assembled ones. A server that cannot be listed ends the task: the agent was bound
   * to it, and running without its tools would answer something else than what was asked.
   */
  async #mcpTools(
    task: AssembledTask,
    servers: readonly McpServerConnection[],
    { vault, secrets }: { vault: ClearVault; secrets: SecretScrubber },
  ): Promise<{ tools: ToolDefinition[] } | { failure: LoopOutcome }> {
    const runner = this.deps.tools.mcp;
    if (runner === undefined) {
      return { failure: failure(ErrorCode.SERVICE_UNAVAILABLE, 'this executor cannot run MCP tools') };
    }
    try {
      const taken = task.runtime_config.tools.map((tool) => tool.name);
      const listed = await runner.toolsOf(
        { servers, vault, account: task.task_meta.account_id, scrubber: secrets },
        taken,
      );
      if (listed.skipped.length > 0) {
        this.deps.log.warn({ skipped: listed.skipped }, 'MCP tools left out: their names were taken');
      }
      return { tools: listed.tools };
    } catch (error) {
      const coded = error instanceof ToolCallError ? error : undefined;
      const message = secrets.scrub(error instanceof Error ? error.message : String(error));
      this.deps.log.warn({ err: error }, 'listing the MCP servers of the task failed');
      return {
        failure: {
          type: 'error',
          data: {
            code: coded?.code ?? ErrorCode.SERVICE_UNAVAILABLE,
            message,
            retryable: coded?.retryable ?? true,
          },
        },
      };
    }
  }
}

/** The account the task runs for, as tools pass it on (seed 004's x-account-id / x-account-type). */
function accountOf(task: AssembledTask): TaskAccount {
  const { account_id: id, account_type: type } = task.task_meta;
  return type === undefined ? { id } : { id, type };
}

/** What the task's HTTP tools may be given through their `context_params`. */
function toolContextOf(task: AssembledTask): TaskContextValues {
  const { user_id, account_id, account_type, trace_id } = task.task_meta;
  return { user_id, account_id, account_type, trace_id, variables: task.input.variables };
}

/** Why the task's models cannot be spoken here; undefined when they can. */
export function unsupportedModel(task: AssembledTask): string | undefined {
  const models = [task.runtime_config.model, ...(task.runtime_config.fallback_models ?? [])];
  for (const model of models) {
    if (!isKnownApi(model.api)) {
      return `model api "${model.api}" is not supported; this executor speaks ${MODEL_APIS.join(', ')}`;
    }
    if (!isKnownProvider(model.provider)) {
      return `model provider "${model.provider}" is not supported; this executor speaks OpenAI-compatible chat completions (providers ${OPENAI_COMPATIBLE_PROVIDERS.join(', ')})`;
    }
  }
  return undefined;
}
