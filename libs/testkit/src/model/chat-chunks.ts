/**
 * OpenAI wire objects for a scripted reply: the `chat.completion.chunk` sequence of a streamed
 * answer (role, reasoning deltas, content deltas, index-keyed tool calls with arguments in pieces,
 * finish reason, then usage) and the single `chat.completion` of a non-streamed one.
 */
import type { ChatRequestBody, ModelReply, ModelUsage } from './model-script.js';

export interface CompletionIdentity {
  id: string;
  created: number;
  model: string;
}

export interface ResolvedToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type ChatCompletionChunk = {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: 0; delta: Record<string, unknown>; logprobs: null; finish_reason: string | null }>;
  usage?: Required<ModelUsage>;
};

const DEFAULT_CHUNK_SIZE = 4;

/** Splits text into pieces of `size` characters without cutting a surrogate pair. */
export function splitIntoPieces(text: string, size: number): string[] {
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`chunk size must be a positive integer, got ${size}`);
  const characters = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < characters.length; i += size) pieces.push(characters.slice(i, i + size).join(''));
  return pieces;
}

export function resolveToolCalls(reply: ModelReply, nextId: () => string): ResolvedToolCall[] {
  return (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? nextId(),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
}

export function finishReasonOf(reply: ModelReply): string {
  return reply.finishReason ?? ((reply.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop');
}

/** The reply's usage, or an estimate of about four characters per token in and out. */
export function usageOf(
  reply: ModelReply,
  request: ChatRequestBody,
  toolCalls: ResolvedToolCall[],
): Required<ModelUsage> {
  if (reply.usage) {
    const { prompt_tokens, completion_tokens } = reply.usage;
    return {
      prompt_tokens,
      completion_tokens,
      total_tokens: reply.usage.total_tokens ?? prompt_tokens + completion_tokens,
    };
  }
  const outChars =
    (reply.content ?? '').length +
    (reply.reasoning ?? '').length +
    toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  const prompt_tokens = Math.ceil(JSON.stringify(request.messages).length / 4);
  const completion_tokens = Math.ceil(outChars / 4);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** Content chunks (role, reasoning, text, tool calls) without the finishing ones. */
export function contentChunks(
  reply: ModelReply,
  identity: CompletionIdentity,
  toolCalls: ResolvedToolCall[],
): ChatCompletionChunk[] {
  const size = reply.chunkSize ?? DEFAULT_CHUNK_SIZE;
  const chunk = (delta: Record<string, unknown>): ChatCompletionChunk => chunkOf(identity, delta, null);
  const chunks = [chunk({ role: 'assistant', content: '' })];
  for (const piece of splitIntoPieces(reply.reasoning ?? '', size))
    chunks.push(chunk({ reasoning_content: piece }));
  for (const piece of splitIntoPieces(reply.content ?? '', size)) chunks.push(chunk({ content: piece }));
  toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of splitIntoPieces(call.arguments, size)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  return chunks;
}

/** The finish-reason chunk and, as OpenAI sends it last, a chunk with no choices carrying usage. */
export function finishingChunks(
  reply: ModelReply,
  identity: CompletionIdentity,
  usage: Required<ModelUsage>,
): ChatCompletionChunk[] {
  return [
    chunkOf(identity, {}, finishReasonOf(reply)),
    {
      id: identity.id,
      object: 'chat.completion.chunk',
      created: identity.created,
      model: identity.model,
      choices: [],
      usage,
    },
  ];
}

export function completionOf(
  reply: ModelReply,
  identity: CompletionIdentity,
  toolCalls: ResolvedToolCall[],
  usage: Required<ModelUsage>,
): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: reply.content ?? null };
  if (reply.reasoning !== undefined) message['reasoning_content'] = reply.reasoning;
  if (toolCalls.length > 0) {
    message['tool_calls'] = toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: identity.id,
    object: 'chat.completion',
    created: identity.created,
    model: identity.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(reply) }],
    usage,
  };
}

function chunkOf(
  identity: CompletionIdentity,
  delta: Record<string, unknown>,
  finishReason: string | null,
): ChatCompletionChunk {
  return {
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}
