/**
 * A `POST /v1/chat/completions` body turned into the task it asks for: `model` is the agent's workflow id,
 * `messages` become the task's chat messages, `user` its user, and three extension fields (which the
 * official clients pass as extra body fields) its `variables`, `idempotency_key` and `trace_id`. The agent
 * decides the model, its parameters and its tools, so sampling parameters (`temperature`, `max_tokens`,
 * ...) are ignored. What a task cannot carry is refused with a 400 naming the field: client-side tools
 * (`tools`, `functions`) and a conversation replaying client tool calls (the mesh runs its tools itself),
 * and more than one choice (`n`).
 */
import { ChatMessage, JsonObject, SubmitTaskRequest, WorkflowRef } from '@agentmesh/protocol';
import { z } from 'zod';
import { InvalidRequest } from '../errors.js';
import { modelNotFound, OpenAiRefusal, unsupportedField } from './openai-errors.js';

/** The task's user when the request has no `user`: credentials the agent needs are read for this user. */
export const DEFAULT_CHAT_USER_ID = 'default';

/** The fields the façade reads; anything else OpenAI defines (or a client adds) is ignored. */
const ChatCompletionBody = z.looseObject({
  model: z.string().min(1, 'model must name an agent (its workflow_id)'),
  messages: z.array(z.unknown()).min(1, 'messages must hold at least one message'),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  user: z.string().nullish(),
  n: z.int().nullish(),
  tools: z.array(z.unknown()).nullish(),
  functions: z.array(z.unknown()).nullish(),
  /** Extension: the task's `input.variables`. */
  variables: JsonObject.nullish(),
  /** Extension: checked as `SubmitTaskRequest` checks them. */
  idempotency_key: z.unknown().optional(),
  trace_id: z.unknown().optional(),
});

export interface ChatCompletionTask {
  workflowId: string;
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  includeUsage: boolean;
  /** A `SubmitTaskRequest` body, for the same submission path as `POST /v1/tasks`. */
  submission: Record<string, unknown>;
}

export function parseChatCompletionRequest(body: unknown): ChatCompletionTask | OpenAiRefusal {
  const parsed = ChatCompletionBody.safeParse(body);
  if (!parsed.success) return new OpenAiRefusal(InvalidRequest.fromZod(parsed.error));
  const request = parsed.data;
  // `workflow_id` or `workflow_id@version` (a pinned agent version).
  if (!WorkflowRef.safeParse(request.model).success) return modelNotFound(request.model);
  if (request.n != null && request.n !== 1) {
    return unsupportedField('n', 'n must be 1: an agent gives one answer per task');
  }
  for (const field of ['tools', 'functions'] as const) {
    if ((request[field]?.length ?? 0) > 0) {
      return unsupportedField(
        field,
        `${field} cannot be sent: the agent's own tools run inside the mesh; bind tools to the agent instead`,
      );
    }
  }
  const messages: unknown[] = [];
  for (const [index, message] of request.messages.entries()) {
    const mapped = taskMessage(message, `messages[${index}]`);
    if (mapped instanceof OpenAiRefusal) return mapped;
    messages.push(mapped);
  }
  const submission: Record<string, unknown> = {
    workflow_id: request.model,
    user_id: request.user ?? DEFAULT_CHAT_USER_ID,
    messages,
    ...(request.variables != null ? { variables: request.variables } : {}),
    ...(request.idempotency_key !== undefined ? { idempotency_key: request.idempotency_key } : {}),
    ...(request.trace_id !== undefined ? { trace_id: request.trace_id } : {}),
  };
  // Checked here too so the refusal names the field the client sent (`user`, not `user_id`).
  const checked = SubmitTaskRequest.safeParse(submission);
  if (!checked.success) {
    const refusal = InvalidRequest.fromZod(checked.error);
    const path = checked.error.issues[0]?.path[0];
    return new OpenAiRefusal(refusal, path === 'user_id' ? 'user' : null);
  }
  return {
    workflowId: request.model,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    submission,
  };
}

const MAPPED_ROLES = new Set(['system', 'developer', 'user', 'assistant']);

/** One client message as a task message, or why it cannot be one. */
function taskMessage(message: unknown, where: string): unknown {
  const role =
    typeof message === 'object' && message !== null && 'role' in message
      ? (message as { role: unknown }).role
      : undefined;
  if (role === 'tool' || role === 'function') {
    return unsupportedField(
      `${where}.role`,
      `${where}: role "${role}" cannot be sent: tool calls run inside the mesh, so a conversation carries no client tool results`,
    );
  }
  if (typeof role !== 'string' || !MAPPED_ROLES.has(role)) {
    return unsupportedField(
      `${where}.role`,
      `${where}.role must be "system", "developer", "user" or "assistant"`,
    );
  }
  const assistant = message as { tool_calls?: unknown; function_call?: unknown };
  if (
    role === 'assistant' &&
    ((Array.isArray(assistant.tool_calls) && assistant.tool_calls.length > 0) ||
      (assistant.function_call !== undefined && assistant.function_call !== null))
  ) {
    return unsupportedField(
      `${where}.tool_calls`,
      `${where}: an assistant message with tool calls cannot be sent: tool calls run inside the mesh`,
    );
  }
  const parsed = ChatMessage.safeParse(message);
  if (!parsed.success) {
    const refusal = InvalidRequest.fromZod(parsed.error, where);
    const issuePath = parsed.error.issues[0]?.path ?? [];
    const param = issuePath.reduce<string>(
      (path, key) => (typeof key === 'number' ? `${path}[${key}]` : `${path}.${String(key)}`),
      where,
    );
    return new OpenAiRefusal(refusal, param);
  }
  return message;
}
