/**
 * The Anthropic Messages API (`POST <base_url>/v1/messages`, streamed) behind the loop's model interface,
 * through the official SDK (`@anthropic-ai/sdk`): the SDK reads the wire (SSE, JSON, error bodies); this
 * adapter turns its stream events into the assistant turn: text and thinking handed on as they come,
 * `tool_use` blocks into tool calls (in block order), signed thinking blocks kept on the turn
 * (`provider_state`) for the next request, `stop_reason` mapped to the loop's finish reasons, and usage
 * with cache reads and writes. `overloaded_error` (529, also sent inside a stream) and 429 are retried
 * like any load failure, `retry-after` honoured. With the model config's `stream: false` (a proxy that does
 * not stream) the whole `Message` is asked for and fed through the same assembly as one stream's events.
 *
 * `base_url` is the API's origin (`https://api.anthropic.com`); a trailing `/v1` is accepted and dropped.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { ChatToolCall, TokenUsage } from '@agentmesh/protocol';
import { AttemptFailure, excerpt } from '../attempt-failure.js';
import type {
  AssistantReply,
  ChatRequest,
  ChatResult,
  CompleteOptions,
  FinishReason,
} from '../chat-types.js';
import { estimateUsage } from '../usage-estimate.js';
import {
  NativeCallRunner,
  statusOf,
  wholeAnswer,
  type AttemptResult,
  type NativeAttempt,
  type NativeModelOptions,
} from '../native/native-call.js';
import { ANTHROPIC_API, anthropicRequest } from './anthropic-request.js';

/** Anthropic's error types worth another try: load, not the request. */
const RETRYABLE_TYPES = new Set(['overloaded_error', 'rate_limit_error', 'api_error', 'timeout_error']);

/** `stop_reason` in the loop's words (`length` and `content_filter` are what it acts on). */
const FINISH_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content_filter',
};

export class AnthropicMessagesModel {
  private readonly runner: NativeCallRunner;
  private readonly baseURL: string;

  constructor(options: NativeModelOptions) {
    this.runner = new NativeCallRunner(options);
    this.baseURL = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  }

  async complete(chat: ChatRequest, options: CompleteOptions = {}): Promise<ChatResult> {
    const body = anthropicRequest(chat);
    return this.runner.run(options, (attempt) => this.attempt(body, attempt), classify(this.runner));
  }

  private async attempt(
    body: Anthropic.MessageCreateParamsStreaming,
    attempt: NativeAttempt,
  ): Promise<AttemptResult> {
    const client = new Anthropic({
      // The vault's key or none: explicit nulls keep the SDK from reading ANTHROPIC_API_KEY /
      // ANTHROPIC_AUTH_TOKEN from the executor's environment for a keyless endpoint.
      apiKey: this.runner.apiKey ?? null,
      authToken: null,
      // A keyless endpoint (a local proxy): the SDK wants the auth header omitted on purpose.
      ...(this.runner.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
      baseURL: this.baseURL,
      fetch: attempt.fetch,
      maxRetries: 0,
      // Our attempt deadline governs; the SDK's own clock only as a backstop behind it.
      timeout: this.runner.timeoutMs * 2,
      logLevel: 'off',
    });
    if (!this.runner.stream) {
      const request: Anthropic.MessageCreateParamsNonStreaming = { ...body, stream: false };
      const whole = await client.messages.create(request, { signal: attempt.signal });
      const turn = new TurnAssembly();
      const { sink, flush } = wholeAnswer(attempt);
      for (const event of eventsOf(whole)) turn.apply(event, sink);
      const result = turn.result(body);
      flush();
      return result;
    }
    const stream = await client.messages.create(body, { signal: attempt.signal });
    const turn = new TurnAssembly();
    for await (const event of stream) {
      attempt.touch();
      turn.apply(event, attempt);
      const waiting = attempt.backpressure?.();
      if (waiting !== undefined) await waiting;
    }
    return turn.result(body);
  }
}

/** A whole `Message` as the events a stream of it would carry, each block given whole at its start. */
function eventsOf(message: Anthropic.Message): Anthropic.RawMessageStreamEvent[] {
  const { content, stop_reason, stop_sequence, usage } = message;
  const events: Anthropic.RawMessageStreamEvent[] = [
    { type: 'message_start', message: { ...message, content: [] } },
  ];
  content.forEach((block, index) => {
    events.push({ type: 'content_block_start', index, content_block: block });
    events.push({ type: 'content_block_stop', index });
  });
  events.push({
    type: 'message_delta',
    delta: { stop_reason, stop_sequence } as Anthropic.RawMessageDeltaEvent['delta'],
    usage: usage as unknown as Anthropic.MessageDeltaUsage,
  });
  return events;
}

interface BlockParts {
  type: string;
  text: string;
  signature?: string;
  data?: string;
  id?: string;
  name?: string;
  json: string;
  input?: unknown;
  /** A tool_use block's position among the turn's tool calls. */
  callIndex?: number;
}

/** The stream's events put together into one assistant turn. */
class TurnAssembly {
  private readonly blocks = new Map<number, BlockParts>();
  private stopReason: string | null = null;
  private inputTokens: number | undefined;
  private outputTokens: number | undefined;
  private cacheRead = 0;
  private cacheWrite = 0;
  private id: string | undefined;
  private model: string | undefined;
  private started = false;
  private toolUses = 0;

  apply(event: Anthropic.RawMessageStreamEvent, attempt: NativeAttempt): void {
    switch (event.type) {
      case 'message_start':
        this.started = true;
        this.id = event.message.id;
        this.model = event.message.model;
        this.takeUsage(event.message.usage);
        return;
      case 'content_block_start': {
        const block = event.content_block as unknown as Record<string, unknown>;
        const parts: BlockParts = { type: String(block['type']), text: '', json: '' };
        if (typeof block['text'] === 'string') parts.text = block['text'];
        if (typeof block['thinking'] === 'string') parts.text = block['thinking'];
        if (typeof block['signature'] === 'string') parts.signature = block['signature'];
        if (typeof block['data'] === 'string') parts.data = block['data'];
        if (typeof block['id'] === 'string') parts.id = block['id'];
        if (typeof block['name'] === 'string') parts.name = block['name'];
        parts.input = block['input'];
        this.blocks.set(event.index, parts);
        if (parts.type === 'text') attempt.content(parts.text);
        if (parts.type === 'thinking') attempt.reasoning(parts.text);
        if (parts.type === 'tool_use') {
          parts.callIndex = this.toolUses++;
          attempt.toolCallDelta({
            index: parts.callIndex,
            ...(parts.id === undefined ? {} : { id: parts.id }),
            ...(parts.name === undefined ? {} : { name: parts.name }),
            arguments: '',
          });
        }
        return;
      }
      case 'content_block_stop': {
        // A call streamed without input_json_delta (no arguments): its arguments are the start's input.
        const parts = this.blocks.get(event.index);
        if (parts?.callIndex !== undefined && parts.json === '')
          attempt.toolCallDelta({ index: parts.callIndex, arguments: JSON.stringify(parts.input ?? {}) });
        return;
      }
      case 'content_block_delta': {
        const parts = this.blocks.get(event.index);
        if (parts === undefined) return;
        const delta = event.delta;
        if (delta.type === 'text_delta') {
          parts.text += delta.text;
          attempt.content(delta.text);
        } else if (delta.type === 'thinking_delta') {
          parts.text += delta.thinking;
          attempt.reasoning(delta.thinking);
        } else if (delta.type === 'signature_delta') {
          parts.signature = (parts.signature ?? '') + delta.signature;
        } else if (delta.type === 'input_json_delta') {
          parts.json += delta.partial_json;
          if (parts.callIndex !== undefined)
            attempt.toolCallDelta({ index: parts.callIndex, arguments: delta.partial_json });
        }
        return;
      }
      case 'message_delta':
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        this.takeUsage(event.usage);
        return;
      default:
        return;
    }
  }

  result(request: Anthropic.MessageCreateParamsStreaming): AttemptResult {
    if (!this.started) {
      throw new AttemptFailure({ retryable: false, reason: 'the answer has no message_start event' });
    }
    let content = '';
    let reasoning = '';
    const toolCalls: ChatToolCall[] = [];
    const thinking: Record<string, string>[] = [];
    for (const [, block] of [...this.blocks.entries()].sort(([a], [b]) => a - b)) {
      if (block.type === 'text') content += block.text;
      else if (block.type === 'thinking') {
        reasoning += block.text;
        thinking.push({ type: 'thinking', thinking: block.text, signature: block.signature ?? '' });
      } else if (block.type === 'redacted_thinking' && block.data !== undefined) {
        thinking.push({ type: 'redacted_thinking', data: block.data });
      } else if (block.type === 'tool_use' && block.id && block.name) {
        const args = block.json !== '' ? block.json : JSON.stringify(block.input ?? {});
        toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: args } });
      }
      // Server tools (`server_tool_use`, their results) run at Anthropic: nothing for the loop to do.
    }
    const message: AssistantReply = { role: 'assistant', content: content === '' ? null : content };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (reasoning !== '') message.reasoning_content = reasoning;
    if (thinking.length > 0) message.provider_state = { api: ANTHROPIC_API, thinking };
    const finishReason: FinishReason =
      this.stopReason === null ? null : (FINISH_REASONS[this.stopReason] ?? this.stopReason);
    const base = {
      message,
      finishReason,
      ...(this.id === undefined ? {} : { responseId: this.id }),
      ...(this.model === undefined ? {} : { responseModel: this.model }),
    };
    if (this.inputTokens === undefined && this.outputTokens === undefined) {
      return { ...base, usage: estimateUsage(JSON.stringify(request).length, message), usageReported: false };
    }
    return { ...base, usage: this.usage() };
  }

  /** Anthropic's `input_tokens` leaves out cached tokens: the prompt is all three. */
  private usage(): TokenUsage {
    const prompt = (this.inputTokens ?? 0) + this.cacheRead + this.cacheWrite;
    const completion = this.outputTokens ?? 0;
    const usage: TokenUsage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    };
    if (this.cacheRead > 0) usage.cache_read_tokens = this.cacheRead;
    if (this.cacheWrite > 0) usage.cache_write_tokens = this.cacheWrite;
    return usage;
  }

  /** `message_start` has the input side, `message_delta` the cumulative output (and, lately, input) side. */
  private takeUsage(raw: object | null | undefined): void {
    if (!raw) return;
    const usage = raw as Record<string, unknown>;
    const count = (key: string): number | undefined => {
      const value = usage[key];
      return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
    };
    this.inputTokens = count('input_tokens') ?? this.inputTokens;
    this.outputTokens = count('output_tokens') ?? this.outputTokens;
    this.cacheRead = count('cache_read_input_tokens') ?? this.cacheRead;
    this.cacheWrite = count('cache_creation_input_tokens') ?? this.cacheWrite;
  }
}

/** Anthropic's errors: HTTP ones by status, in-stream ones (no status) by their `error.type`. */
function classify(runner: NativeCallRunner) {
  return (error: unknown): AttemptFailure | undefined => {
    if (!(error instanceof Anthropic.APIError) || error instanceof Anthropic.APIConnectionError)
      return undefined;
    if (statusOf(error) !== undefined) return undefined;
    const type = error.type ?? 'error';
    const text = runner.scrub(error.apiMessage ?? error.message);
    return new AttemptFailure({
      retryable: RETRYABLE_TYPES.has(type),
      reason: `the stream reported ${type}: ${excerpt(text, 200)}`,
      // Overloaded inside a stream is Anthropic's 529, said after the 200.
      ...(type === 'overloaded_error' ? { status: 529 } : {}),
      body: excerpt(text),
    });
  };
}
