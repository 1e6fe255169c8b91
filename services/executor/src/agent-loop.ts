/**
 * The LLM tool-calling loop of one task attempt. Each step is one streamed model call: text deltas
 * become `message_chunk` events and reasoning deltas `tool_thinking`; when the model asks for tools,
 * every call is announced (`tool_start`), all of them run concurrently, a running call may report
 * `tool_progress` (MCP progress notifications), each reports its `tool_result` as it finishes, and their answers join the conversation in the order the model made the calls. Dynamic
 * tools (seed 004) that a tool result carries in `_dynamic_tools` join the tools the model is offered from
 * the next step on (see tools/task-tools.ts). The loop ends when the model answers without tool calls (`done`),
 * or with an `error` outcome.
 *
 * Write-ahead: a step's tools run only once its `tool_start`s are stored (`emitDurably`), so every side
 * effect has its announcement in the task's log even when the attempt dies during the call.
 *
 * Budget: each model call's usage (and cost) becomes a `step_finished` event with the task's running totals
 * and the turn's finish reason (see budget/task-spend.ts); before asking the model again, a task past its
 * token or cost budget ends with BUDGET_EXCEEDED.
 *
 * Cut turns: a turn that ended at the token limit (`length`) with tool calls has them announced but not
 * run: each gets a tool error telling the model its answer was cut and to call again with less, and the
 * loop goes on (within max_steps). A final answer cut (`length`) or filtered (`content_filter`) ends the
 * task `done` with `truncated: true`.
 *
 * Structured output (structured-output.ts): with an output schema, the final answer must be one JSON value
 * that validates; it is delivered parsed in `done.output`. One that does not is sent back with what failed
 * (at most MAX_OUTPUT_CORRECTIONS times, each a step), then the task ends with OUTPUT_INVALID.
 *
 * Models: each `step_finished` names the model that answered (a fallback model, model-choice/, may have
 * taken over from the agent's first).
 *
 * Reasoning stays on the assistant turns of the conversation; the client's provider profile decides
 * whether it goes back to the server (DeepSeek's thinking mode with tools requires it, others refuse it).
 *
 * Resume: given a {@link ResumePoint} (a redelivered task's conversation rebuilt from its events), the loop
 * starts from it: answered model turns are not asked again, calls with a written result do not run again,
 * calls that were started and left without a result run again with their call_id (and a new
 * `tool_start`), and the step count goes on from the turns already answered.
 *
 * Approval: a call whose tool's policy asks for it (approval/approval-rules.ts) is announced with the
 * others but held, not run; once the step's other calls have their results the loop returns a `parked`
 * result naming the held calls, and the runner parks the task. Calls the resume point says were approved
 * run without asking again.
 *
 * The loop publishes nothing itself and emits no terminal event: it hands progress events to `emit` and
 * returns the terminal outcome, so the caller decides what an attempt that was interrupted writes. Model,
 * tool execution and event sink are injected, which lets tests run it against real HTTP servers without
 * NATS.
 */
import {
  ErrorCode,
  type ChatAssistantMessage,
  type ChatMessage,
  type ChatToolCall,
  type ChatToolMessage,
  type EventData,
  type ToolDefinition,
} from '@agentmesh/protocol';
import type { TaskMetrics } from './executor-metrics.js';
import { chatSpanOptions, inSpan, markFailed, recordChatOutcome, toolSpanOptions } from './gen-ai-spans.js';
import type { ChatRequest, ChatResult, CompleteOptions } from './llm/index.js';
import { LlmError } from './llm/index.js';
import { abortError } from './task-abort.js';
import { toolCallDeltaRelay } from './tool-call-delta-relay.js';
import { shownToolResult, TaskToolSet, type DynamicToolsChange } from './tools/task-tools.js';
import { prepareToolCall, toolMessage, withCallIds, type PreparedToolCall } from './tools/tool-call.js';
import { toolFailure, type ToolOutcome } from './tools/index.js';
import type { ResumePoint } from './resume/resume-point.js';
import { TaskSpend, type TaskBudget } from './budget/task-spend.js';
import { approvalNeeded, type ApprovalNeed } from './approval/approval-rules.js';
import {
  checkOutput,
  correctionMessage,
  MAX_OUTPUT_CORRECTIONS,
  withOutputInstruction,
} from './structured-output.js';

/** The model client as the loop uses it (OpenAiChatClient in production). */
export interface ChatModel {
  complete(request: ChatRequest, options?: CompleteOptions): Promise<ChatResult>;
}

export interface ToolExecutionContext {
  readonly callId: string;
  /** Aborted when the task is cancelled or runs out of time. */
  readonly signal: AbortSignal;
  /**
   * Reports the running call's progress (MCP progress notifications, an A2A task's status updates with its
   * id); becomes a `tool_progress` event.
   */
  readonly onProgress?: (progress: {
    progress: number;
    total?: number;
    message?: string;
    remote_task_id?: string;
  }) => void;
}

/** Runs a tool whose arguments are already validated. Expected failures are outcomes, not exceptions. */
export type ToolExecutor = (
  tool: ToolDefinition,
  args: Record<string, unknown>,
  ctx: ToolExecutionContext,
) => Promise<ToolOutcome>;

type ProgressType =
  | 'tool_thinking'
  | 'tool_call_delta'
  | 'tool_start'
  | 'tool_progress'
  | 'tool_result'
  | 'message_chunk'
  | 'step_finished'
  | 'model_waiting';
export type ProgressEvent = { [T in ProgressType]: { type: T; data: EventData<T> } }[ProgressType];

export type LoopOutcome =
  { type: 'done'; data: EventData<'done'> } | { type: 'error'; data: EventData<'error'> };

/** A call announced (its `tool_start` stored) but held until a person approves it. */
export interface HeldCall {
  readonly callId: string;
  readonly tool: string;
  /** As its `tool_start` shows them. */
  readonly arguments: Record<string, unknown> | string;
  readonly need: ApprovalNeed;
}

/** The step's other calls are answered; these wait for approval, and the task parks. */
export interface ParkedLoop {
  type: 'parked';
  data: { held: readonly HeldCall[] };
}

export type LoopResult = LoopOutcome | ParkedLoop;

export interface AgentLoopDependencies {
  model: ChatModel;
  executeTool: ToolExecutor;
  /** Receives every progress event in order; must not throw. */
  emit: (event: ProgressEvent) => void;
  /**
   * Like `emit`, and resolves once the event (and so every event before it) is stored; rejects when it
   * cannot be. Tools run only after their `tool_start`s resolved (write-ahead). Without it, `emit` is used
   * and tools run at once.
   */
  emitDurably?: (event: ProgressEvent) => Promise<void>;
  /** Argument text a tool call must reach before it streams as `tool_call_delta` (tool-call-delta-relay.ts). */
  toolArgsStreamMinChars?: number;
  /** A promise while the receiver of `emit` is backed up: the model's stream is read on once it resolves. */
  backpressure?: () => Promise<void> | undefined;
  /** Told about a tool executor that threw (a bug); the model gets an INTERNAL tool error instead. */
  onToolCrash?: (error: unknown, tool: ToolDefinition) => void;
  /** Told which dynamic tools a tool's result added, replaced or had rejected. */
  onDynamicTools?: (change: DynamicToolsChange, tool: string) => void;
  /** Told about every model call and every tool call that runs. */
  metrics?: TaskMetrics;
  /**
   * Awaited (when it returns a promise) before each model call and before a step's tools run; the signal
   * is checked after it. The runner checks there that the attempt still owns its task after a stall.
   */
  beforeCall?: () => Promise<void> | undefined;
  /**
   * Handed the loop's conversation (the task's messages, then every answered model turn and tool result)
   * as it grows: a thread's turn is taken from it when the task ends (thread-turns.ts). Its first
   * `openingLength` messages are the opening the loop sent (with an output schema, its instruction added).
   */
  onConversation?: (conversation: readonly ChatMessage[], openingLength: number) => void;
  /**
   * The caller parks tasks: calls needing approval are held and the loop may return `parked`. Without it
   * such a call is not run either: the model gets a tool error saying it cannot be approved here.
   */
  parking?: true;
  now?: () => number;
}

export interface AgentTask {
  model: { name: string; temperature?: number; max_tokens?: number };
  /** What the chat spans name as `gen_ai.conversation.id` (the task's trace_id). */
  conversationId?: string;
  /** The conversation so far (system prompt first, as the assembler put it). */
  messages: readonly ChatMessage[];
  /**
   * The tools the model may call at first; it sees only their name, description and parameters. Dynamic
   * tools found on the way are added to them.
   */
  tools: readonly ToolDefinition[];
  /** Model calls allowed; a model still asking for tools on the last one ends the task. */
  maxSteps: number;
  /** Tools whose results may add dynamic tools besides recall's `recall_actions` (see TaskToolSet). */
  dynamicToolSources?: readonly string[];
  /** Where earlier attempts of a redelivered task left off (the conversation after `messages`). */
  resume?: ResumePoint;
  /** What the task has spent (earlier attempts' included, priced when the model is); a fresh, unpriced one by default. */
  spend?: TaskSpend;
  /** Tokens and dollars the task may spend; checked before every model call. */
  budget?: TaskBudget;
  /** The JSON Schema the final answer must validate against (structured-output.ts). */
  outputSchema?: object;
}

export function runAgentLoop(
  task: AgentTask,
  deps: AgentLoopDependencies & { parking: true },
  signal: AbortSignal,
): Promise<LoopResult>;
export function runAgentLoop(
  task: AgentTask,
  deps: AgentLoopDependencies,
  signal: AbortSignal,
): Promise<LoopOutcome>;
export async function runAgentLoop(
  task: AgentTask,
  deps: AgentLoopDependencies,
  signal: AbortSignal,
): Promise<LoopResult> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const approved = task.resume?.approvedCalls ?? new Set<string>();
  const opening =
    task.outputSchema === undefined ? task.messages : withOutputInstruction(task.messages, task.outputSchema);
  const conversation: ChatMessage[] = [...opening, ...(task.resume?.conversation ?? [])];
  deps.onConversation?.(conversation, opening.length);
  let corrections = 0;
  const tools = new TaskToolSet(task.tools, task.dynamicToolSources);
  const settings: Omit<ChatRequest, 'messages' | 'tools'> = {
    model: task.model.name,
    ...(task.model.temperature === undefined ? {} : { temperature: task.model.temperature }),
    ...(task.model.max_tokens === undefined ? {} : { max_tokens: task.model.max_tokens }),
  };
  const spend = task.spend ?? new TaskSpend();
  if (task.resume !== undefined) {
    await lookUpDynamicToolsAgain(task.resume, tools, deps, signal);
    const pending = task.resume.pendingCalls;
    if (pending.length > 0) {
      if (signal.aborted) return aborted(signal);
      const answered = await runToolCalls(pending, tools, deps, signal, approved);
      if (answered === undefined) return unannounced(signal);
      const start = conversation.length;
      answerCalls(answered.done, conversation, tools, deps);
      orderToolMessages(conversation, start);
      if (answered.held.length > 0) return { type: 'parked', data: { held: answered.held } };
    }
  }

  for (let step = (task.resume?.steps ?? 0) + 1; ; step++) {
    await deps.beforeCall?.();
    if (signal.aborted) return aborted(signal);
    const overBudget = spend.overBudget(task.budget);
    if (overBudget !== undefined) return { type: 'error', data: overBudget };
    let result: ChatResult;
    try {
      const offered = tools.size > 0 ? { tools: tools.modelTools() } : {};
      result = await callModel(
        deps,
        { ...settings, ...offered, messages: conversation },
        signal,
        task.conversationId,
      );
    } catch (error) {
      if (signal.aborted) return aborted(signal);
      if (error instanceof LlmError) {
        return failed(error.code, error.message, error.retryable, error.detail);
      }
      throw error;
    }
    const { finishReason } = result;
    // Not awaited: it is stored with the step's next write (its tool_starts, or the terminal event).
    deps.emit({
      type: 'step_finished',
      data: {
        ...spend.addStep(step, result.usage, {
          finishReason,
          ...(result.usageReported === false ? { usageReported: false } : {}),
          ...(result.answeredBy?.index === undefined ? {} : { modelIndex: result.answeredBy.index }),
        }),
        ...answeredBy(result),
      },
    });
    const calls = withCallIds(result.message.tool_calls ?? [], step);
    if (calls.length === 0) {
      let output: { output: unknown } | undefined;
      if (task.outputSchema !== undefined) {
        const checked = checkOutput(task.outputSchema, result.message.content ?? '');
        if (!checked.ok) {
          if (corrections >= MAX_OUTPUT_CORRECTIONS || step >= task.maxSteps) {
            return failed(
              ErrorCode.OUTPUT_INVALID,
              `${checked.reason} (after ${corrections} correction${corrections === 1 ? '' : 's'})`,
              false,
              checked.detail,
            );
          }
          corrections++;
          conversation.push(
            { role: 'assistant', content: result.message.content ?? '' },
            correctionMessage(checked.reason),
          );
          continue;
        }
        output = { output: checked.value };
      }
      const data = {
        message: result.message.content ?? '',
        steps: step,
        usage: spend.usage,
        ...(spend.usageReported ? {} : { usage_reported: false as const }),
        ...(spend.costUsd === undefined ? {} : { cost_usd: spend.costUsd }),
        duration_ms: now() - startedAt,
        ...(finishReason ? { finish_reason: finishReason } : {}),
        ...(finishReason === 'length' || finishReason === 'content_filter'
          ? { truncated: true as const }
          : {}),
        ...output,
      };
      return { type: 'done', data };
    }
    if (step >= task.maxSteps) {
      // Running these calls would be pointless: no model call is left to read their results.
      return failed(
        ErrorCode.MAX_STEPS_EXCEEDED,
        `the model still asked for tools after ${task.maxSteps} model call${task.maxSteps === 1 ? '' : 's'} (max_steps)`,
        false,
      );
    }
    conversation.push(assistantTurn(result.message, calls));
    const refusal = finishReason === 'length' ? CUT_CALL : undefined;
    const answered = await runToolCalls(calls, tools, deps, signal, approved, refusal);
    if (answered === undefined) return unannounced(signal);
    answerCalls(answered.done, conversation, tools, deps);
    if (answered.held.length > 0) return { type: 'parked', data: { held: answered.held } };
    if (signal.aborted) return aborted(signal);
  }
}

/** The calls' answers join the conversation; dynamic tools their results carry join the tool set. */
function answerCalls(
  answered: readonly AnsweredCall[],
  conversation: ChatMessage[],
  tools: TaskToolSet,
  deps: AgentLoopDependencies,
): void {
  for (const { call, outcome, shown } of answered) {
    conversation.push(toolMessage(call.callId, shown));
    absorbDynamicTools(outcome, call.toolName, tools, deps);
  }
}

/** The dynamic tools a successful result carries join the task's tool set; the caller is told. */
function absorbDynamicTools(
  outcome: ToolOutcome,
  toolName: string,
  tools: TaskToolSet,
  deps: AgentLoopDependencies,
): void {
  if (!outcome.ok) return;
  const change = tools.absorb(outcome.result, toolName);
  if (change !== undefined) deps.onDynamicTools?.(change, toolName);
}

/**
 * After pending calls of a resumed turn were answered at the end: the tool messages that follow the last
 * assistant turn go back to the order in which the model made the calls.
 */
function orderToolMessages(conversation: ChatMessage[], appendedFrom: number): void {
  let first = appendedFrom;
  while (first > 0 && conversation[first - 1]?.role === 'tool') first--;
  const turn = conversation[first - 1];
  if (turn?.role !== 'assistant') return;
  const order = (turn.tool_calls ?? []).map((call) => call.id);
  const answers = conversation.slice(first) as ChatToolMessage[];
  answers.sort((a, b) => order.indexOf(a.tool_call_id) - order.indexOf(b.tool_call_id));
  conversation.splice(first, answers.length, ...answers);
}

/**
 * The tools that resolved calls of earlier attempts added, added again: their events show the model only
 * names, descriptions and parameters, never where a tool is sent. So each such call of a tool that may
 * add tools (recall's `recall_actions`, the agent's `dynamic_tool_sources`: look-ups, not actions) is sent
 * again, without events, and its result absorbed; its answer in the conversation stays the one written.
 */
async function lookUpDynamicToolsAgain(
  resume: ResumePoint,
  tools: TaskToolSet,
  deps: AgentLoopDependencies,
  signal: AbortSignal,
): Promise<void> {
  for (const { call } of resume.dynamicToolsLookups) {
    const prepared = prepareToolCall(call, tools);
    if ('failure' in prepared.run || !tools.mayAddTools(prepared.toolName)) continue;
    let outcome: ToolOutcome;
    try {
      outcome = await deps.executeTool(prepared.run.tool, prepared.run.args, { callId: call.id, signal });
    } catch (error) {
      deps.onToolCrash?.(error, prepared.run.tool);
      continue;
    }
    absorbDynamicTools(outcome, prepared.toolName, tools, deps);
  }
}

function callModel(
  deps: AgentLoopDependencies,
  request: ChatRequest,
  signal: AbortSignal,
  conversationId: string | undefined,
): Promise<ChatResult> {
  const { name, ...options } = chatSpanOptions(request, conversationId);
  return inSpan(name, options, async (span) => {
    const metered = deps.metrics?.modelCall(request.model);
    try {
      const result = await deps.model.complete(request, {
        signal,
        onContentDelta: (delta) => deps.emit({ type: 'message_chunk', data: { delta } }),
        onReasoningDelta: (delta) => deps.emit({ type: 'tool_thinking', data: { delta } }),
        onToolCallDelta: toolCallDeltaRelay(
          (data) => deps.emit({ type: 'tool_call_delta', data }),
          deps.toolArgsStreamMinChars,
        ),
        ...(deps.backpressure === undefined ? {} : { backpressure: deps.backpressure }),
      });
      recordChatOutcome(span, result);
      metered?.succeeded(result.usage);
      return result;
    } catch (error) {
      if (error instanceof LlmError) markFailed(span, error.code, error.message);
      metered?.failed(errorType(error));
      throw error;
    }
  });
}

/** One call's outcome as its tool returned it, and as the model and the events are shown it. */
interface AnsweredCall {
  call: PreparedToolCall;
  outcome: ToolOutcome;
  shown: ToolOutcome;
}

/**
 * Runs one step's calls once their `tool_start`s are stored; the outcomes come back in the order the model
 * made the calls. Calls that need approval (and were not approved before) are held instead of run.
 * Undefined when the starts could not be stored: then no call runs.
 */
async function runToolCalls(
  calls: readonly ChatToolCall[],
  tools: TaskToolSet,
  deps: AgentLoopDependencies,
  signal: AbortSignal,
  approved: ReadonlySet<string>,
  refusal?: ToolOutcome,
): Promise<{ done: AnsweredCall[]; held: HeldCall[] } | undefined> {
  const prepared = calls.map((call): PreparedToolCall => {
    const ready = prepareToolCall(call, tools);
    return refusal === undefined ? ready : { ...ready, run: { failure: refusal } };
  });
  const starts = prepared.map((call): ProgressEvent => ({
    type: 'tool_start',
    data: { call_id: call.callId, tool: call.toolName, arguments: call.shownArguments },
  }));
  const last = starts.pop();
  for (const start of starts) deps.emit(start);
  if (last !== undefined) {
    if (deps.emitDurably === undefined) deps.emit(last);
    else {
      // Events are stored in order: once the last start is, all of them are.
      try {
        await deps.emitDurably(last);
      } catch {
        return undefined;
      }
    }
  }
  await deps.beforeCall?.();
  if (signal.aborted) return undefined;
  const held: HeldCall[] = [];
  const runnable = prepared.map((call): PreparedToolCall | undefined => {
    if (!('tool' in call.run) || approved.has(call.callId)) return call;
    const need = approvalNeeded(call.run.tool, call.run.args);
    if (need === undefined) return call;
    if (deps.parking !== true) {
      const failure = toolFailure(
        ErrorCode.FORBIDDEN,
        `${call.toolName} needs approval (${need.reason}), and this runner cannot wait for one`,
      );
      return { ...call, run: { failure } };
    }
    held.push({ callId: call.callId, tool: call.toolName, arguments: call.shownArguments, need });
    return undefined;
  });
  const done = await Promise.all(
    runnable.filter((call) => call !== undefined).map((call) => runToolCall(call, deps, signal)),
  );
  return { done, held };
}

async function runToolCall(
  call: PreparedToolCall,
  deps: AgentLoopDependencies,
  signal: AbortSignal,
): Promise<AnsweredCall> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const outcome = 'failure' in call.run ? call.run.failure : await executeTool(call, call.run, deps, signal);
  const shown = outcome.ok ? { ...outcome, result: shownToolResult(outcome.result) } : outcome;
  const base = { call_id: call.callId, tool: call.toolName, duration_ms: Math.max(0, now() - startedAt) };
  deps.emit({
    type: 'tool_result',
    data: shown.ok ? { ...base, ok: true, result: shown.result } : { ...base, ok: false, error: shown.error },
  });
  return { call, outcome, shown };
}

function executeTool(
  call: PreparedToolCall,
  { tool, args }: { tool: ToolDefinition; args: Record<string, unknown> },
  deps: AgentLoopDependencies,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const { name, ...options } = toolSpanOptions(tool, call.callId);
  return inSpan(name, options, async (span) => {
    const ended = deps.metrics?.toolCall(tool.name);
    let outcome: ToolOutcome;
    // Progress belongs between the call's tool_start and its tool_result: nothing after the result.
    let running = true;
    const onProgress: ToolExecutionContext['onProgress'] = (progress) => {
      if (running) {
        deps.emit({
          type: 'tool_progress',
          data: { call_id: call.callId, tool: call.toolName, ...progress },
        });
      }
    };
    try {
      outcome = await deps.executeTool(tool, args, { callId: call.callId, signal, onProgress });
    } catch (error) {
      deps.onToolCrash?.(error, tool);
      outcome = toolFailure(ErrorCode.INTERNAL, `the tool ${tool.name} failed unexpectedly`);
    }
    running = false;
    if (!outcome.ok) markFailed(span, outcome.error.code);
    ended?.(outcome.ok ? undefined : outcome.error.code);
    return outcome;
  });
}

/**
 * The assistant's turn as it joins the conversation: the tool calls carry the ids the tool messages
 * answer, and the reasoning is kept for the client's provider profile to send back or leave out.
 */
function assistantTurn(message: ChatResult['message'], calls: ChatToolCall[]): ChatAssistantMessage {
  const turn: ChatAssistantMessage = { role: 'assistant', content: message.content, tool_calls: calls };
  if (message.reasoning_content !== undefined) turn.reasoning_content = message.reasoning_content;
  // A native API's state for the turn (signed thinking, reasoning items) goes back to that API with it.
  if (message.provider_state !== undefined) turn['provider_state'] = message.provider_state;
  return turn;
}

/** What the model is told for each call of a turn cut at the token limit: its arguments may be cut too. */
const CUT_CALL: ToolOutcome = toolFailure(
  ErrorCode.INVALID_REQUEST,
  'this call was not run: your answer was cut off at the output token limit (finish_reason "length") before it was complete, so its arguments may be cut too; make the call again, with shorter arguments or fewer calls at once',
);

/** Which model answered the turn, when a fallback model said (model-choice/fallback-model.ts). */
function answeredBy(result: ChatResult): { model?: string; model_index?: number } {
  const by = result.answeredBy;
  if (by === undefined) return {};
  return by.index === undefined ? { model: by.model } : { model: by.model, model_index: by.index };
}

/** As the chat span's `error.type`: the protocol code of a model error, else the exception's name. */
function errorType(error: unknown): string {
  if (error instanceof LlmError) return error.code;
  return error instanceof Error ? error.name : 'Error';
}

/** The outcome when a step's tool_starts could not be stored (the attempt has lost its event stream). */
function unannounced(signal: AbortSignal): LoopOutcome {
  if (signal.aborted) return aborted(signal);
  return failed(ErrorCode.INTERNAL, 'the tool calls could not be announced in the task events', true);
}

function aborted(signal: AbortSignal): LoopOutcome {
  return { type: 'error', data: abortError(signal.reason) };
}

function failed(code: ErrorCode, message: string, retryable: boolean, detail?: unknown): LoopOutcome {
  return {
    type: 'error',
    data: detail === undefined ? { code, message, retryable } : { code, message, retryable, detail },
  };
}
