/**
 * The OpenAI Responses API (`POST <base_url>/responses`, streamed) behind the loop's model interface,
 * through the official SDK (`openai`): the SDK reads the wire; this adapter turns its stream events into
 * the assistant turn: output text and reasoning (summary or text) handed on as they come, completed
 * `function_call` items into tool calls (in output order), completed reasoning items (with their
 * encrypted content) kept on the turn (`provider_state`) for the next request, the response's status into
 * the loop's finish reasons, and usage with cached input tokens. With the model config's `stream: false` the
 * whole `Response` is asked for and fed through the same assembly as the events a stream of it would carry.
 *
 * `base_url` is the API base as for chat completions (`https://api.openai.com/v1`).
 */
import OpenAI from 'openai';
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
import { RESPONSES_API, responsesRequest } from './responses-request.js';

/** Error codes of a failed response (or an `error` event) that a later attempt may not meet. */
const RETRYABLE_CODES = new Set(['server_error', 'rate_limit_exceeded', 'overloaded', 'internal_error']);

export class OpenAiResponsesModel {
  private readonly runner: NativeCallRunner;

  constructor(options: NativeModelOptions) {
    this.runner = new NativeCallRunner(options);
  }

  async complete(chat: ChatRequest, options: CompleteOptions = {}): Promise<ChatResult> {
    const body = responsesRequest(chat);
    return this.runner.run(options, (attempt) => this.attempt(body, attempt), classify(this.runner));
  }

  private async attempt(
    body: OpenAI.Responses.ResponseCreateParamsStreaming,
    attempt: NativeAttempt,
  ): Promise<AttemptResult> {
    const client = new OpenAI({
      // Everything explicit: the SDK would otherwise read OPENAI_* variables of the executor's environment.
      apiKey: this.runner.apiKey ?? 'none',
      organization: null,
      project: null,
      baseURL: this.runner.baseUrl,
      fetch: attempt.fetch,
      maxRetries: 0,
      timeout: this.runner.timeoutMs * 2,
      logLevel: 'off',
    });
    if (!this.runner.stream) {
      const request: OpenAI.Responses.ResponseCreateParamsNonStreaming = { ...body, stream: false };
      const whole = await client.responses.create(request, { signal: attempt.signal });
      const turn = new ResponseAssembly(this.runner);
      const { sink, flush } = wholeAnswer(attempt);
      for (const event of eventsOf(whole)) turn.apply(event, sink);
      const result = turn.result(body);
      flush();
      return result;
    }
    const stream = await client.responses.create(body, { signal: attempt.signal });
    const turn = new ResponseAssembly(this.runner);
    for await (const event of stream) {
      attempt.touch();
      turn.apply(event, attempt);
      const waiting = attempt.backpressure?.();
      if (waiting !== undefined) await waiting;
    }
    return turn.result(body);
  }
}

/** A whole `Response` as the events the assembly reads from a stream of it (text and reasoning whole). */
function eventsOf(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseStreamEvent[] {
  const events: Record<string, unknown>[] = [{ type: 'response.created', response }];
  response.output.forEach((item, output_index) => {
    if (item.type === 'message') {
      for (const part of item.content)
        if (part.type === 'output_text')
          events.push({ type: 'response.output_text.delta', delta: part.text });
    } else if (item.type === 'reasoning') {
      const texts = [...item.summary, ...(item.content ?? [])].map((part) => part.text);
      for (const delta of texts) events.push({ type: 'response.reasoning_summary_text.delta', delta });
    }
    events.push({ type: 'response.output_item.done', output_index, item });
  });
  const end =
    response.status === 'failed'
      ? 'response.failed'
      : response.status === 'incomplete'
        ? 'response.incomplete'
        : 'response.completed';
  events.push({ type: end, response });
  return events as unknown as OpenAI.Responses.ResponseStreamEvent[];
}

class ResponseAssembly {
  private content = '';
  private reasoning = '';
  private readonly calls = new Map<number, ChatToolCall>();
  /** Function calls by output_index as they stream: their position in the turn, and whether arguments came. */
  private readonly streamingCalls = new Map<number, { index: number; streamed: boolean }>();
  private readonly reasoningItems: Record<string, unknown>[] = [];
  private final: OpenAI.Responses.Response | undefined;
  private id: string | undefined;
  private model: string | undefined;

  constructor(private readonly runner: NativeCallRunner) {}

  apply(event: OpenAI.Responses.ResponseStreamEvent, attempt: NativeAttempt): void {
    switch (event.type) {
      case 'response.created':
        this.id = event.response.id;
        this.model = event.response.model;
        return;
      case 'response.output_text.delta':
        this.content += event.delta;
        attempt.content(event.delta);
        return;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        this.reasoning += event.delta;
        attempt.reasoning(event.delta);
        return;
      case 'response.output_item.added':
        if (event.item.type === 'function_call') {
          const index = this.streamingCalls.size;
          this.streamingCalls.set(event.output_index, { index, streamed: false });
          attempt.toolCallDelta({ index, id: event.item.call_id, name: event.item.name, arguments: '' });
        }
        return;
      case 'response.function_call_arguments.delta': {
        const call = this.streamingCalls.get(event.output_index);
        if (call === undefined || event.delta === '') return;
        call.streamed = true;
        attempt.toolCallDelta({ index: call.index, arguments: event.delta });
        return;
      }
      case 'response.output_item.done': {
        const item = event.item;
        if (item.type === 'function_call') {
          // A server that sent the arguments only whole: they go on as one piece.
          const call = this.streamingCalls.get(event.output_index);
          if (call === undefined) {
            const index = this.streamingCalls.size;
            this.streamingCalls.set(event.output_index, { index, streamed: true });
            attempt.toolCallDelta({ index, id: item.call_id, name: item.name, arguments: item.arguments });
          } else if (!call.streamed) {
            call.streamed = true;
            attempt.toolCallDelta({ index: call.index, arguments: item.arguments });
          }
          this.calls.set(event.output_index, {
            id: item.call_id,
            type: 'function',
            function: { name: item.name, arguments: item.arguments },
          });
        } else if (item.type === 'reasoning') {
          this.reasoningItems.push({
            type: 'reasoning',
            id: item.id,
            summary: item.summary,
            ...(item.encrypted_content ? { encrypted_content: item.encrypted_content } : {}),
          });
        }
        return;
      }
      case 'response.completed':
      case 'response.incomplete':
        this.final = event.response;
        return;
      case 'response.failed': {
        const error = event.response.error;
        const code = error?.code ?? 'failed';
        throw new AttemptFailure({
          retryable: RETRYABLE_CODES.has(code),
          reason: `the response failed: ${code}: ${excerpt(this.runner.scrub(error?.message ?? ''), 200)}`,
        });
      }
      default:
        return;
    }
  }

  result(request: OpenAI.Responses.ResponseCreateParamsStreaming): AttemptResult {
    if (this.final === undefined) {
      throw new AttemptFailure({ retryable: true, reason: 'the stream ended before the response completed' });
    }
    const message: AssistantReply = { role: 'assistant', content: this.content === '' ? null : this.content };
    const toolCalls = [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (this.reasoning !== '') message.reasoning_content = this.reasoning;
    if (this.reasoningItems.length > 0)
      message.provider_state = { api: RESPONSES_API, reasoning: this.reasoningItems };
    const base = {
      message,
      finishReason: finishReason(this.final, toolCalls.length > 0),
      ...((this.id ?? this.final.id) ? { responseId: this.id ?? this.final.id } : {}),
      ...((this.model ?? this.final.model) ? { responseModel: String(this.model ?? this.final.model) } : {}),
    };
    const usage = this.final.usage;
    if (!usage)
      return { ...base, usage: estimateUsage(JSON.stringify(request).length, message), usageReported: false };
    const tokens: TokenUsage = {
      prompt_tokens: usage.input_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.total_tokens || usage.input_tokens + usage.output_tokens,
    };
    const cached = usage.input_tokens_details?.cached_tokens ?? 0;
    if (cached > 0) tokens.cache_read_tokens = cached;
    return { ...base, usage: tokens };
  }
}

function finishReason(response: OpenAI.Responses.Response, calledTools: boolean): FinishReason {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'max_output_tokens'
      ? 'length'
      : reason === 'content_filter'
        ? 'content_filter'
        : (reason ?? 'length');
  }
  return calledTools ? 'tool_calls' : 'stop';
}

/** In-stream `error` events (no HTTP status) by their code; HTTP errors are left to the runner. */
function classify(runner: NativeCallRunner) {
  return (error: unknown): AttemptFailure | undefined => {
    if (!(error instanceof OpenAI.APIError) || error instanceof OpenAI.APIConnectionError) return undefined;
    if (statusOf(error) !== undefined) return undefined;
    const code = typeof error.code === 'string' ? error.code : 'error';
    return new AttemptFailure({
      retryable: RETRYABLE_CODES.has(code),
      reason: `the stream reported ${code}: ${excerpt(runner.scrub(error.message), 200)}`,
    });
  };
}
