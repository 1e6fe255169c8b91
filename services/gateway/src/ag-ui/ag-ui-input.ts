/**
 * An AG-UI `RunAgentInput` (validated with `@ag-ui/core`'s schema) turned into the mesh task it asks for:
 * the agent is the route's, `messages` become the task's chat messages (text only: user, system,
 * developer and assistant; tool, activity and reasoning messages are the mesh's own business and are
 * left out), and `forwardedProps.agentmesh` may carry `user_id`, `variables` and `idempotency_key`.
 * Client-side `tools` and `context` are not offered to the agent (its tools run inside the mesh).
 * `resume` (answers to interrupts) is refused: approvals are decided with the task API.
 */
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { JsonObject, SubmitTaskRequest } from '@agentmesh/protocol';
import { z } from 'zod';
import { InvalidRequest } from '../errors.js';

/** The task's user when forwardedProps names none: credentials the agent needs are read for this user. */
export const DEFAULT_AG_UI_USER_ID = 'default';

const MeshProps = z
  .strictObject({
    user_id: z.string().optional(),
    variables: JsonObject.optional(),
    idempotency_key: z.string().optional(),
  })
  .optional();

export interface AgUiRunRequest {
  threadId: string;
  runId: string;
  /** Every text message of the input, in order. */
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  /** A `SubmitTaskRequest` body without its messages and thread (the route adds them). */
  submission: Record<string, unknown>;
}

export function parseAgUiRunInput(workflowId: string, body: unknown): AgUiRunRequest | InvalidRequest {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error as never);
  const input = parsed.data;
  if ((input.resume?.length ?? 0) > 0) {
    return new InvalidRequest(
      'resume cannot be sent: decide a waiting approval with POST /v1/tasks/{trace_id}/approvals/{call_id}; the run goes on on the open stream',
    );
  }
  const forwarded: unknown = input.forwardedProps;
  const props = MeshProps.safeParse(
    typeof forwarded === 'object' && forwarded !== null
      ? (forwarded as Record<string, unknown>)['agentmesh']
      : undefined,
  );
  if (!props.success) return InvalidRequest.fromZod(props.error, 'forwardedProps.agentmesh');
  const messages: AgUiRunRequest['messages'] = [];
  for (const message of input.messages) {
    const content = textOf((message as { content?: unknown }).content);
    if (content === undefined || content === '') continue;
    if (message.role === 'user') messages.push({ role: 'user', content });
    else if (message.role === 'assistant') messages.push({ role: 'assistant', content });
    else if (message.role === 'system' || message.role === 'developer')
      messages.push({ role: 'system', content });
  }
  if (!messages.some((message) => message.role === 'user')) {
    return new InvalidRequest('messages must hold at least one user message with text', {
      field: 'messages',
    });
  }
  const mesh = props.data ?? {};
  const submission: Record<string, unknown> = {
    workflow_id: workflowId,
    user_id: mesh.user_id ?? DEFAULT_AG_UI_USER_ID,
    ...(mesh.variables === undefined ? {} : { variables: mesh.variables }),
    ...(mesh.idempotency_key === undefined ? {} : { idempotency_key: mesh.idempotency_key }),
  };
  const checked = SubmitTaskRequest.safeParse({ ...submission, messages });
  if (!checked.success) return InvalidRequest.fromZod(checked.error);
  return { threadId: input.threadId, runId: input.runId, messages, submission };
}

/** A message's text: a string, or the text parts of a content array. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .flatMap((part: unknown) =>
      typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text'
        ? [String((part as { text?: unknown }).text ?? '')]
        : [],
    )
    .join('');
}

/** The messages a thread's next run takes: those after the last assistant message (the thread has the rest). */
export function newTurnOf(messages: AgUiRunRequest['messages']): AgUiRunRequest['messages'] {
  const lastAssistant = messages.findLastIndex((message) => message.role === 'assistant');
  return messages.slice(lastAssistant + 1);
}
