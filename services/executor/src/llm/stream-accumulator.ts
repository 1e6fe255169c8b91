/**
 * Assembles `chat.completion.chunk` objects into the assistant's message: text and reasoning pieces
 * are concatenated (and handed back so they can be streamed on), tool calls are put together by
 * their `index` (id and name arrive once, arguments in pieces, parallel calls interleaved) and kept
 * in index order; the finish reason and usage are taken as they come, and the completion's `id` and
 * the `model` that answered from the first chunk naming them. A non-streamed `chat.completion` goes
 * through the same path as one big chunk.
 *
 * `content` is a string from most servers; Mistral's reasoning models send an array of parts instead
 * (`{type: "text", text}` and `{type: "thinking", thinking: [{type: "text", text}]}`), whose text parts
 * are the answer and whose thinking parts the reasoning. A part of another type (an image, a reference)
 * is skipped. Only a non-string content takes that branch, so the string path costs nothing more.
 */
import { randomUUID } from 'node:crypto';
import type { ChatToolCall, TokenUsage } from '@agentmesh/protocol';
import type { AssistantReply, FinishReason } from './chat-types.js';
import { isJsonObject } from '@agentmesh/protocol';

/** The chunk is not what an OpenAI-compatible server sends. */
export class MalformedChunkError extends Error {
  override readonly name = 'MalformedChunkError';
}

/** The server reported an error inside an otherwise successful (HTTP 200) answer. */
export class UpstreamReportedError extends Error {
  override readonly name = 'UpstreamReportedError';
}

/** A piece of one tool call to pass on: `id` and `name` on the piece where they first arrive. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

/** Text to pass on from one chunk. */
export interface ChunkDeltas {
  content?: string;
  reasoning?: string;
  /** Tool call pieces, in the order the chunk had them. */
  toolCalls?: ToolCallDelta[];
}

export interface AssembledCompletion {
  message: AssistantReply;
  finishReason: FinishReason;
  /** Undefined when the server sent none (the client then estimates it). */
  usage: TokenUsage | undefined;
  /** The completion's `id`, when the server gave one. */
  responseId?: string;
  /** The model that answered (often more exact than the one requested), when the server named it. */
  responseModel?: string;
}

interface ToolCallParts {
  id?: string;
  name?: string;
  arguments: string;
}

type JsonObject = Record<string, unknown>;

export class StreamAccumulator {
  private content = '';
  private reasoning = '';
  private readonly toolCalls = new Map<number, ToolCallParts>();
  private lastToolCallIndex: number | undefined;
  private finishReason: FinishReason = null;
  private usage: TokenUsage | undefined;
  private responseId: string | undefined;
  private responseModel: string | undefined;
  private choiceSeen = false;

  /** True once a chunk carried the first choice: the answer has begun. */
  get hasChoice(): boolean {
    return this.choiceSeen;
  }

  /** True once a finish reason arrived: the answer is complete even if `[DONE]` never comes. */
  get isFinished(): boolean {
    return this.finishReason !== null;
  }

  /** Takes one parsed `chat.completion.chunk`; returns the text it adds. */
  applyChunk(chunk: unknown): ChunkDeltas {
    if (!isJsonObject(chunk)) throw new MalformedChunkError('a stream chunk is not a JSON object');
    throwIfUpstreamError(chunk);
    this.takeIdentity(chunk);
    this.takeUsage(chunk['usage']);
    const choice = firstChoice(chunk['choices']);
    if (!choice) return {};
    this.choiceSeen = true;
    this.takeFinishReason(choice['finish_reason']);
    const delta = choice['delta'];
    if (delta === undefined || delta === null) return {};
    if (!isJsonObject(delta)) throw new MalformedChunkError('`choices[0].delta` is not an object');
    return this.applyDelta(delta);
  }

  /** Takes a whole non-streamed `chat.completion`; returns its text as one delta each. */
  applyCompletion(body: unknown): ChunkDeltas {
    if (!isJsonObject(body)) throw new MalformedChunkError('the response body is not a JSON object');
    throwIfUpstreamError(body);
    this.takeIdentity(body);
    this.takeUsage(body['usage']);
    const choice = firstChoice(body['choices']);
    if (!choice) return {};
    this.choiceSeen = true;
    this.takeFinishReason(choice['finish_reason']);
    const message = choice['message'];
    if (!isJsonObject(message)) throw new MalformedChunkError('`choices[0].message` is not an object');
    const calls = message['tool_calls'];
    const asDelta: JsonObject = {
      ...message,
      tool_calls: Array.isArray(calls) ? calls.map((call, index) => ({ ...asObject(call), index })) : calls,
    };
    return this.applyDelta(asDelta);
  }

  result(): AssembledCompletion {
    const message: AssistantReply = { role: 'assistant', content: this.content === '' ? null : this.content };
    const toolCalls = this.assembleToolCalls();
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (this.reasoning !== '') message.reasoning_content = this.reasoning;
    return {
      message,
      finishReason: this.finishReason,
      usage: this.usage,
      ...(this.responseId === undefined ? {} : { responseId: this.responseId }),
      ...(this.responseModel === undefined ? {} : { responseModel: this.responseModel }),
    };
  }

  private applyDelta(delta: JsonObject): ChunkDeltas {
    const deltas: ChunkDeltas = {};
    const rawContent = delta['content'];
    let content: string | undefined;
    let partsReasoning = '';
    if (typeof rawContent === 'string') content = rawContent;
    else if (Array.isArray(rawContent)) [content, partsReasoning] = readContentParts(rawContent);
    else if (rawContent !== undefined && rawContent !== null) {
      throw new MalformedChunkError('`content` is neither a string nor an array of parts');
    }
    if (content) {
      this.content += content;
      deltas.content = content;
    }
    // DeepSeek-style servers send `reasoning_content`, OpenRouter/Ollama-style ones `reasoning`; some
    // send both with the same text, so one of them is taken, never both.
    // Reasoning is a side channel: a shape we do not know is skipped rather than failing the answer.
    const reasoning =
      partsReasoning || stringOrEmpty(delta['reasoning_content']) || stringOrEmpty(delta['reasoning']);
    if (reasoning) {
      this.reasoning += reasoning;
      deltas.reasoning = reasoning;
    }
    const toolCalls = delta['tool_calls'];
    if (toolCalls !== undefined && toolCalls !== null) {
      if (!Array.isArray(toolCalls)) throw new MalformedChunkError('`tool_calls` is not an array');
      for (const call of toolCalls) {
        const piece = this.applyToolCallDelta(call);
        if (piece !== undefined) (deltas.toolCalls ??= []).push(piece);
      }
    }
    return deltas;
  }

  /** Folds one tool call piece in; answers what of it is new (undefined: nothing). */
  private applyToolCallDelta(call: unknown): ToolCallDelta | undefined {
    if (!isJsonObject(call)) throw new MalformedChunkError('a tool call delta is not an object');
    const id = optionalString(call, 'id');
    const fn = call['function'];
    if (fn !== undefined && fn !== null && !isJsonObject(fn)) {
      throw new MalformedChunkError('a tool call delta has a `function` that is not an object');
    }
    const index = this.toolCallIndexOf(call['index'], id);
    const parts = this.toolCalls.get(index) ?? { arguments: '' };
    this.toolCalls.set(index, parts);
    this.lastToolCallIndex = index;
    const piece: ToolCallDelta = { index, arguments: '' };
    // Some servers repeat id and name on every piece; the first one counts.
    if (id && !parts.id) parts.id = piece.id = id;
    if (fn) {
      const name = optionalString(fn, 'name');
      if (name && !parts.name) parts.name = piece.name = name;
      const args = fn['arguments'];
      if (typeof args === 'string') piece.arguments = args;
      // A few servers send the arguments of a non-streamed call as an object.
      else if (isJsonObject(args)) piece.arguments = JSON.stringify(args);
      parts.arguments += piece.arguments;
    }
    return piece.arguments === '' && piece.id === undefined && piece.name === undefined ? undefined : piece;
  }

  /** The delta's `index`; servers that leave it out get one from the call id or the call before. */
  private toolCallIndexOf(rawIndex: unknown, id: string | undefined): number {
    if (typeof rawIndex === 'number' && Number.isInteger(rawIndex) && rawIndex >= 0) return rawIndex;
    if (rawIndex !== undefined && rawIndex !== null) {
      throw new MalformedChunkError('a tool call delta has an `index` that is not a non-negative integer');
    }
    if (id) {
      for (const [index, parts] of this.toolCalls) if (parts.id === id) return index;
      return this.toolCalls.size === 0 ? 0 : Math.max(...this.toolCalls.keys()) + 1;
    }
    return this.lastToolCallIndex ?? 0;
  }

  private assembleToolCalls(): ChatToolCall[] {
    return [...this.toolCalls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, parts]) => {
        if (!parts.name) throw new MalformedChunkError(`tool call #${index} has no function name`);
        return {
          id: parts.id ?? `call_${randomUUID().replaceAll('-', '')}`,
          type: 'function' as const,
          function: { name: parts.name, arguments: parts.arguments },
        };
      });
  }

  // Only observed (on the chat span), never used: a shape we do not know is skipped, not failed.
  private takeIdentity(body: JsonObject): void {
    this.responseId ??= stringOrEmpty(body['id']) || undefined;
    this.responseModel ??= stringOrEmpty(body['model']) || undefined;
  }

  private takeFinishReason(value: unknown): void {
    if (typeof value === 'string' && value !== '') this.finishReason = value;
  }

  private takeUsage(value: unknown): void {
    if (!isJsonObject(value)) return;
    const prompt = tokenCount(value['prompt_tokens']);
    const completion = tokenCount(value['completion_tokens']);
    const total = tokenCount(value['total_tokens']) || prompt + completion;
    this.usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
    // OpenAI (and most compatible servers): `prompt_tokens_details.cached_tokens`; DeepSeek: `prompt_cache_hit_tokens`.
    const details = value['prompt_tokens_details'];
    const cached = tokenCount(
      isJsonObject(details) ? details['cached_tokens'] : value['prompt_cache_hit_tokens'],
    );
    if (cached > 0) this.usage.cache_read_tokens = cached;
  }
}

/**
 * The answer text and the reasoning of a content part array (Mistral): text parts are the answer,
 * the text of thinking parts (an array of text parts, or a string) the reasoning.
 */
function readContentParts(parts: readonly unknown[]): [string, string] {
  let text = '';
  let thinking = '';
  for (const part of parts) {
    if (!isJsonObject(part)) throw new MalformedChunkError('a content part is not an object');
    if (part['type'] === 'text') text += stringOrEmpty(part['text']);
    else if (part['type'] === 'thinking') {
      const inner = part['thinking'];
      if (typeof inner === 'string') thinking += inner;
      else if (Array.isArray(inner)) {
        for (const piece of inner) if (isJsonObject(piece)) thinking += stringOrEmpty(piece['text']);
      }
    }
  }
  return [text, thinking];
}

function firstChoice(choices: unknown): JsonObject | undefined {
  if (choices === undefined || choices === null) return undefined;
  if (!Array.isArray(choices)) throw new MalformedChunkError('`choices` is not an array');
  // We never ask for n > 1; a server that sends more choices gets only its first one read.
  const choice = choices.find((c: unknown) => isJsonObject(c) && (c['index'] ?? 0) === 0);
  if (choice === undefined) return undefined;
  return choice as JsonObject;
}

function throwIfUpstreamError(body: JsonObject): void {
  const error = body['error'];
  if (error === undefined || error === null) return;
  const message = isJsonObject(error) ? optionalString(error, 'message') : undefined;
  throw new UpstreamReportedError(message || 'the model server reported an error');
}

function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 0;
}

function optionalString(object: JsonObject, key: string): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new MalformedChunkError(`\`${key}\` is not a string`);
  return value;
}

function stringOrEmpty(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function asObject(value: unknown): JsonObject {
  if (!isJsonObject(value)) throw new MalformedChunkError('a tool call is not an object');
  return value;
}
