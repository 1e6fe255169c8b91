/**
 * A `POST /v1/responses` body turned into the task it asks for. `model` is the agent (`workflow_id` or
 * `workflow_id@version`); `input` (a string, or message items) becomes the task's messages, after
 * `instructions` as a leading `developer` message; `user` (or `safety_identifier`) the task's user;
 * `text.format` of type `json_schema` the task's output schema. Every response runs in a thread so it can
 * be continued: `previous_response_id` names the response whose thread goes on, `conversation` a thread by
 * id; with neither, the route creates a thread. The agent decides the model, its sampling parameters and
 * its tools, so those are ignored; what a task cannot carry is refused with a 400 naming the field:
 * client-side tools (`tools` — the mesh runs the agent's own), items replaying client tool calls
 * (`function_call`, `function_call_output`, ...) and item references.
 */
import { JsonObject, SubmitTaskRequest, ThreadId, TraceIdInput, WorkflowRef } from '@agentmesh/protocol';
import { z } from 'zod';
import { InvalidRequest } from '../errors.js';
import { modelNotFound, OpenAiRefusal, unsupportedField } from '../openai/openai-errors.js';

/** The task's user when the request names none: credentials the agent needs are read for this user. */
export const DEFAULT_RESPONSE_USER_ID = 'default';

/** A response's id is its task's trace id behind this prefix. */
export const RESPONSE_ID_PREFIX = 'resp_';

export function responseIdOf(traceId: string): string {
  return `${RESPONSE_ID_PREFIX}${traceId}`;
}

/** The trace id a response id names, or undefined when it is not one. */
export function traceIdOfResponse(responseId: string): string | undefined {
  if (!responseId.startsWith(RESPONSE_ID_PREFIX)) return undefined;
  const parsed = TraceIdInput.safeParse(responseId.slice(RESPONSE_ID_PREFIX.length));
  return parsed.success ? parsed.data : undefined;
}

const TextFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({
    type: z.literal('json_schema'),
    name: z.string().min(1).max(64),
    schema: JsonObject,
    strict: z.boolean().nullish(),
    description: z.string().nullish(),
  }),
  z.looseObject({ type: z.literal('json_object') }),
]);

/** The fields the door reads; anything else OpenAI defines (or a client adds) is ignored. */
const ResponseBody = z.looseObject({
  model: z.string().min(1, 'model must name an agent (its workflow_id)'),
  input: z.union([z.string().min(1, 'input must not be empty'), z.array(z.unknown()).min(1)]),
  instructions: z.string().nullish(),
  stream: z.boolean().nullish(),
  background: z.boolean().nullish(),
  previous_response_id: z.string().nullish(),
  conversation: z.union([z.string(), z.looseObject({ id: z.string() })]).nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  tools: z.array(z.unknown()).nullish(),
  text: z.looseObject({ format: TextFormat.nullish() }).nullish(),
  /** Extension: the task's `input.variables`. */
  variables: JsonObject.nullish(),
  /** Extension: checked as `SubmitTaskRequest` checks them. */
  idempotency_key: z.unknown().optional(),
  trace_id: z.unknown().optional(),
});

export type ResponseTextFormat = z.infer<typeof TextFormat>;

/** Which thread the response continues, before the route resolves it to a thread id. */
export type ThreadChoice =
  | { kind: 'new' }
  | { kind: 'previous_response'; traceId: string; responseId: string }
  | { kind: 'conversation'; threadId: string };

export interface ResponseTask {
  model: string;
  stream: boolean;
  background: boolean;
  instructions: string | null;
  metadata: Record<string, string>;
  textFormat: ResponseTextFormat;
  thread: ThreadChoice;
  /** A `SubmitTaskRequest` body without its `thread_id` (the route adds it). */
  submission: Record<string, unknown>;
}

export function parseResponseRequest(body: unknown): ResponseTask | OpenAiRefusal {
  const parsed = ResponseBody.safeParse(body);
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.map(String).join('.') ?? '';
    return new OpenAiRefusal(InvalidRequest.fromZod(parsed.error), path === '' ? null : path);
  }
  const request = parsed.data;
  if (!WorkflowRef.safeParse(request.model).success) return modelNotFound(request.model);
  if ((request.tools?.length ?? 0) > 0) {
    return unsupportedField(
      'tools',
      "tools cannot be sent: the agent's own tools run inside the mesh; bind tools to the agent instead",
    );
  }
  const thread = threadChoice(request.previous_response_id, request.conversation);
  if (thread instanceof OpenAiRefusal) return thread;

  const messages: unknown[] = [];
  if (request.instructions != null && request.instructions !== '') {
    messages.push({ role: 'developer', content: request.instructions });
  }
  if (typeof request.input === 'string') {
    messages.push({ role: 'user', content: request.input });
  } else {
    for (const [index, item] of request.input.entries()) {
      const mapped = inputMessage(item, `input[${index}]`);
      if (mapped instanceof OpenAiRefusal) return mapped;
      messages.push(mapped);
    }
  }
  const format = request.text?.format ?? { type: 'text' as const };
  const outputSchema =
    format.type === 'json_schema'
      ? format.schema
      : format.type === 'json_object'
        ? { type: 'object' }
        : undefined;
  const submission: Record<string, unknown> = {
    workflow_id: request.model,
    user_id: request.user ?? request.safety_identifier ?? DEFAULT_RESPONSE_USER_ID,
    messages,
    ...(request.variables != null ? { variables: request.variables } : {}),
    ...(request.idempotency_key !== undefined ? { idempotency_key: request.idempotency_key } : {}),
    ...(request.trace_id !== undefined ? { trace_id: request.trace_id } : {}),
    ...(outputSchema !== undefined ? { output_schema: outputSchema } : {}),
  };
  // Checked here too so the refusal names the field the client sent (`user`, not `user_id`).
  const checked = SubmitTaskRequest.safeParse(submission);
  if (!checked.success) {
    const path = checked.error.issues[0]?.path[0];
    const param =
      path === 'user_id'
        ? 'user'
        : path === 'output_schema'
          ? 'text.format.schema'
          : path === 'messages'
            ? 'input'
            : null;
    return new OpenAiRefusal(InvalidRequest.fromZod(checked.error), param);
  }
  return {
    model: request.model,
    stream: request.stream === true,
    background: request.background === true,
    instructions: request.instructions ?? null,
    metadata: request.metadata ?? {},
    textFormat: format,
    thread,
    submission,
  };
}

function threadChoice(
  previousResponseId: string | null | undefined,
  conversation: string | { id: string } | null | undefined,
): ThreadChoice | OpenAiRefusal {
  if (previousResponseId != null && conversation != null) {
    return unsupportedField(
      'previous_response_id',
      'previous_response_id and conversation cannot both be given: each names the thread to continue',
    );
  }
  if (previousResponseId != null) {
    const traceId = traceIdOfResponse(previousResponseId);
    if (traceId === undefined) {
      return unsupportedField(
        'previous_response_id',
        'previous_response_id must be a response id (resp_ followed by a trace id)',
      );
    }
    return { kind: 'previous_response', traceId, responseId: previousResponseId };
  }
  if (conversation != null) {
    const id = typeof conversation === 'string' ? conversation : conversation.id;
    if (!ThreadId.safeParse(id).success) {
      return unsupportedField(
        'conversation',
        'conversation must be a thread id (1-64 of A-Z, a-z, 0-9, _ or -)',
      );
    }
    return { kind: 'conversation', threadId: id };
  }
  return { kind: 'new' };
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant']);

/** One input item as a task message, or why it cannot be one. */
function inputMessage(item: unknown, where: string): unknown {
  const record = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  const type = record.type ?? 'message';
  if (type !== 'message') {
    return unsupportedField(
      `${where}.type`,
      `${where}: items of type "${String(type)}" cannot be sent: tool calls run inside the mesh, and earlier output is continued with previous_response_id or conversation`,
    );
  }
  const role = record.role;
  if (typeof role !== 'string' || !ROLES.has(role)) {
    return unsupportedField(
      `${where}.role`,
      `${where}.role must be "system", "developer", "user" or "assistant"`,
    );
  }
  const content = record.content;
  if (typeof content === 'string') return { role, content };
  if (!Array.isArray(content)) {
    return unsupportedField(
      `${where}.content`,
      `${where}.content must be a string or a list of content parts`,
    );
  }
  const parts: unknown[] = [];
  for (const [index, part] of content.entries()) {
    const mapped = contentPart(part, role, `${where}.content[${index}]`);
    if (mapped instanceof OpenAiRefusal) return mapped;
    parts.push(mapped);
  }
  return { role, content: parts };
}

function contentPart(part: unknown, role: string, where: string): unknown {
  const record = (typeof part === 'object' && part !== null ? part : {}) as Record<string, unknown>;
  switch (record.type) {
    case 'input_text':
    case 'output_text':
      if (typeof record.text !== 'string')
        return unsupportedField(`${where}.text`, `${where}.text must be a string`);
      return { type: 'text', text: record.text };
    case 'input_image':
      if (role !== 'user') break;
      if (typeof record.image_url !== 'string' || record.image_url === '') {
        return unsupportedField(
          `${where}.image_url`,
          `${where}: an image must be given as image_url (a URL or a data URL); file ids are not stored here`,
        );
      }
      return {
        type: 'image_url',
        image_url: {
          url: record.image_url,
          ...(record.detail === 'low' || record.detail === 'high' || record.detail === 'auto'
            ? { detail: record.detail }
            : {}),
        },
      };
    default:
      break;
  }
  return unsupportedField(
    `${where}.type`,
    `${where}: a ${role} message takes input_text${role === 'user' ? ' and input_image' : ' or output_text'} parts`,
  );
}
