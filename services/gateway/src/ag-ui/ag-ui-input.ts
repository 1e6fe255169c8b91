/**
 * An AG-UI `RunAgentInput` (validated with `@ag-ui/core`'s schema) turned into the mesh task it asks for:
 * the agent is the route's, `messages` become the task's chat messages (text only: user, system,
 * developer and assistant; tool, activity and reasoning messages are the mesh's own business and are
 * left out), and `forwardedProps.agentmesh` may carry `user_id`, `variables` and `idempotency_key`.
 * Client-side `tools` and `context` are not offered to the agent (its tools run inside the mesh).
 * `forwardedProps.agentmesh.stop_at_interrupt` ends the stream at an interrupt (AG-UI's own flow); an input
 * with `resume` answers the interrupts of one task (ids `<trace_id>:<call_id>`: `resolved` approves unless
 * `payload.approved` is false, `cancelled` denies; `payload.comment` goes with the decision) and continues
 * that task's stream instead of starting a task.
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
    stop_at_interrupt: z.boolean().optional(),
  })
  .optional();

/** Answers to the interrupts of one task. */
export interface AgUiResume {
  traceId: string;
  decisions: { callId: string; approve: boolean; comment?: string }[];
}

export interface AgUiRunRequest {
  threadId: string;
  runId: string;
  /** End the stream at an interrupt rather than wait for the decision on it. */
  stopAtInterrupt: boolean;
  /** Present: the input answers interrupts (and `messages` may hold no new user message). */
  resume?: AgUiResume;
  /** Every text message of the input, in order. */
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  /** A `SubmitTaskRequest` body without its messages and thread (the route adds them). */
  submission: Record<string, unknown>;
}

export function parseAgUiRunInput(workflowId: string, body: unknown): AgUiRunRequest | InvalidRequest {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error as never);
  const input = parsed.data;
  const resume = (input.resume?.length ?? 0) > 0 ? resumeOf(input.resume ?? []) : undefined;
  if (resume instanceof InvalidRequest) return resume;
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
  const mesh = props.data ?? {};
  const stopAtInterrupt = mesh.stop_at_interrupt === true;
  if (resume !== undefined)
    return {
      threadId: input.threadId,
      runId: input.runId,
      stopAtInterrupt,
      resume,
      messages,
      submission: {},
    };
  if (!messages.some((message) => message.role === 'user')) {
    return new InvalidRequest('messages must hold at least one user message with text', {
      field: 'messages',
    });
  }
  const submission: Record<string, unknown> = {
    workflow_id: workflowId,
    user_id: mesh.user_id ?? DEFAULT_AG_UI_USER_ID,
    ...(mesh.variables === undefined ? {} : { variables: mesh.variables }),
    ...(mesh.idempotency_key === undefined ? {} : { idempotency_key: mesh.idempotency_key }),
  };
  const checked = SubmitTaskRequest.safeParse({ ...submission, messages });
  if (!checked.success) return InvalidRequest.fromZod(checked.error);
  return { threadId: input.threadId, runId: input.runId, stopAtInterrupt, messages, submission };
}

const INTERRUPT_ID = /^([0-9a-f]{32}):(.{1,200})$/;

function resumeOf(
  entries: readonly { interruptId: string; status: string; payload?: unknown }[],
): AgUiResume | InvalidRequest {
  let traceId: string | undefined;
  const decisions: AgUiResume['decisions'] = [];
  for (const [index, entry] of entries.entries()) {
    const match = INTERRUPT_ID.exec(entry.interruptId);
    if (match === null || (traceId !== undefined && match[1] !== traceId)) {
      return new InvalidRequest(
        `resume[${index}].interruptId must be an interrupt of this door (<trace_id>:<call_id>) of the same task as the others`,
      );
    }
    traceId = match[1]!;
    const payload =
      typeof entry.payload === 'object' && entry.payload !== null
        ? (entry.payload as Record<string, unknown>)
        : {};
    const comment = payload['comment'];
    if (comment !== undefined && (typeof comment !== 'string' || comment.length > 2000)) {
      return new InvalidRequest(`resume[${index}].payload.comment must be text of at most 2000 characters`);
    }
    decisions.push({
      callId: match[2]!,
      approve: entry.status === 'resolved' && payload['approved'] !== false,
      ...(comment === undefined ? {} : { comment }),
    });
  }
  return { traceId: traceId!, decisions };
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
