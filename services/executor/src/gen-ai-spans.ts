/**
 * Spans of the executor, named and attributed after the OpenTelemetry GenAI semantic conventions: one
 * `chat <model>` span per model call and one `execute_tool <name>` span per tool call, under the task
 * attempt's `invoke_agent <workflow_id>` span. The task's trace_id is the conversation
 * (`gen_ai.conversation.id`) that the agent and chat spans name. Spans carry names, ids, token counts
 * and error codes only: never arguments, message text or anything from the vault. Error messages do go
 * into span statuses, so every span is a ScrubbedSpan: what is set on it passes the filter of the open
 * vaults first (secrets/scrubbed-span.ts).
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { TokenUsage, ToolDefinition } from '@agentmesh/protocol';
import { filterSecrets } from '@agentmesh/runtime';
import { ScrubbedSpan, scrubAttributes } from './secrets/scrubbed-span.js';

export const tracer = trace.getTracer('executor');

export const GenAiAttribute = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  REQUEST_MODEL: 'gen_ai.request.model',
  REQUEST_TEMPERATURE: 'gen_ai.request.temperature',
  REQUEST_MAX_TOKENS: 'gen_ai.request.max_tokens',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  RESPONSE_MODEL: 'gen_ai.response.model',
  RESPONSE_ID: 'gen_ai.response.id',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
  AGENT_ID: 'gen_ai.agent.id',
  AGENT_NAME: 'gen_ai.agent.name',
  ERROR_TYPE: 'error.type',
} as const;

export const GenAiOperation = {
  CHAT: 'chat',
  EXECUTE_TOOL: 'execute_tool',
  INVOKE_AGENT: 'invoke_agent',
} as const;

/**
 * Runs `work` inside a span that is active for it (so events published meanwhile carry it), then ends it.
 * The span filters secrets out of everything set on it (see the module comment).
 */
export async function inSpan<T>(
  name: string,
  options: { kind: SpanKind; attributes: Attributes },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  const span = new ScrubbedSpan(
    tracer.startSpan(filterSecrets(name), {
      ...options,
      attributes: scrubAttributes(options.attributes, filterSecrets),
    }),
    filterSecrets,
  );
  try {
    return await context.with(trace.setSpan(context.active(), span), () => work(span));
  } catch (error) {
    markFailed(span, error instanceof Error ? error.name : 'Error');
    throw error;
  } finally {
    span.end();
  }
}

/**
 * The span of one task attempt: an agent invoked in this process. Its kind stays CONSUMER rather than
 * the convention's INTERNAL, as it is also the processing of the bus message that carried the task.
 */
export function agentSpanOptions(
  meta: {
    workflow_id: string;
    trace_id: string;
    account_id: string;
    agent_version?: number;
    agent_digest?: string;
  },
  attempt: number,
) {
  return {
    name: `${GenAiOperation.INVOKE_AGENT} ${meta.workflow_id}`,
    kind: SpanKind.CONSUMER,
    attributes: {
      [GenAiAttribute.OPERATION_NAME]: GenAiOperation.INVOKE_AGENT,
      [GenAiAttribute.AGENT_NAME]: meta.workflow_id,
      [GenAiAttribute.AGENT_ID]: meta.workflow_id,
      [GenAiAttribute.CONVERSATION_ID]: meta.trace_id,
      'agentmesh.account_id': meta.account_id,
      'agentmesh.task.attempt': attempt,
      // The agent version the task runs (absent for a pre-assembled task, which names no stored agent).
      ...(meta.agent_version !== undefined && { 'agentmesh.agent.version': meta.agent_version }),
      ...(meta.agent_digest !== undefined && { 'agentmesh.agent.digest': meta.agent_digest }),
    },
  };
}

export function chatSpanOptions(
  request: { model: string; temperature?: number; max_tokens?: number },
  conversationId?: string,
) {
  const attributes: Attributes = {
    [GenAiAttribute.OPERATION_NAME]: GenAiOperation.CHAT,
    [GenAiAttribute.PROVIDER_NAME]: 'openai',
    [GenAiAttribute.REQUEST_MODEL]: request.model,
  };
  if (conversationId !== undefined) attributes[GenAiAttribute.CONVERSATION_ID] = conversationId;
  if (request.temperature !== undefined) attributes[GenAiAttribute.REQUEST_TEMPERATURE] = request.temperature;
  if (request.max_tokens !== undefined) attributes[GenAiAttribute.REQUEST_MAX_TOKENS] = request.max_tokens;
  return { name: `${GenAiOperation.CHAT} ${request.model}`, kind: SpanKind.CLIENT, attributes };
}

export function recordChatOutcome(
  span: Span,
  result: { usage: TokenUsage; finishReason: string | null; responseId?: string; responseModel?: string },
): void {
  span.setAttributes({
    [GenAiAttribute.USAGE_INPUT_TOKENS]: result.usage.prompt_tokens,
    [GenAiAttribute.USAGE_OUTPUT_TOKENS]: result.usage.completion_tokens,
  });
  if (result.finishReason !== null) {
    span.setAttribute(GenAiAttribute.RESPONSE_FINISH_REASONS, [result.finishReason]);
  }
  if (result.responseId !== undefined) span.setAttribute(GenAiAttribute.RESPONSE_ID, result.responseId);
  if (result.responseModel !== undefined) {
    span.setAttribute(GenAiAttribute.RESPONSE_MODEL, result.responseModel);
  }
}

export function toolSpanOptions(tool: ToolDefinition, callId: string) {
  return {
    name: `${GenAiOperation.EXECUTE_TOOL} ${tool.name}`,
    kind: SpanKind.INTERNAL,
    attributes: {
      [GenAiAttribute.OPERATION_NAME]: GenAiOperation.EXECUTE_TOOL,
      [GenAiAttribute.TOOL_NAME]: tool.name,
      [GenAiAttribute.TOOL_CALL_ID]: callId,
      // The convention's values: `function` runs in the agent's process, `extension` calls out to an API.
      [GenAiAttribute.TOOL_TYPE]: tool.type === 'NATIVE' ? 'function' : 'extension',
    },
  };
}

/** Marks a span failed with a protocol error code (or an exception name) as `error.type`. */
export function markFailed(span: Span, errorType: string, message?: string): void {
  span.setAttribute(GenAiAttribute.ERROR_TYPE, errorType);
  span.setStatus(
    message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message },
  );
}
