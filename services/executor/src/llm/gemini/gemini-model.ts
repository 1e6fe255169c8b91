/**
 * Google Gemini's `streamGenerateContent` (`<base_url>/<version>/models/<model>:streamGenerateContent?alt=sse`)
 * behind the loop's model interface, through the official SDK (`@google/genai`): the SDK reads the wire;
 * this adapter turns its response chunks into the assistant turn: text handed on as it comes, thought parts
 * as reasoning, `functionCall` parts into tool calls (in order; an id made when Gemini gives none), thought
 * signatures kept on the turn (`provider_state`), `finishReason` mapped to the loop's words, and
 * `usageMetadata` (thoughts count as completion, `cachedContentTokenCount` as cache reads). A 429's wait
 * comes from `Retry-After` or the body's `google.rpc.RetryInfo`. With the model config's `stream: false`,
 * `generateContent` answers whole, and that one response goes through the same assembly as one chunk.
 *
 * `base_url` is the API's origin (`https://generativelanguage.googleapis.com`); a trailing version segment
 * (`/v1beta`, `/v1`) is taken as the API version, else `v1beta`.
 */
import { randomUUID } from 'node:crypto';
import {
  ApiError,
  GoogleGenAI,
  type GenerateContentParameters,
  type GenerateContentResponse,
} from '@google/genai';
import type { ChatToolCall, TokenUsage } from '@agentmesh/protocol';
import { AttemptFailure, excerpt } from '../attempt-failure.js';
import type {
  AssistantReply,
  ChatRequest,
  ChatResult,
  CompleteOptions,
  FinishReason,
} from '../chat-types.js';
import { isRetryableStatus } from '../retry-policy.js';
import { estimateUsage } from '../usage-estimate.js';
import {
  NativeCallRunner,
  wholeAnswer,
  type AttemptResult,
  type NativeAttempt,
  type NativeModelOptions,
} from '../native/native-call.js';
import { GEMINI_API, geminiRequest, type GeminiSignatures } from './gemini-request.js';

const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']);

export class GeminiModel {
  private readonly runner: NativeCallRunner;
  private readonly origin: string;
  private readonly apiVersion: string;

  constructor(options: NativeModelOptions) {
    this.runner = new NativeCallRunner(options);
    const url = new URL(options.baseUrl);
    const segments = url.pathname.split('/').filter(Boolean);
    const last = segments[segments.length - 1];
    const versioned = last !== undefined && /^v\d+(alpha|beta)?\d*$/.test(last);
    this.apiVersion = versioned ? last : 'v1beta';
    url.pathname = `/${(versioned ? segments.slice(0, -1) : segments).join('/')}`;
    this.origin = url.toString().replace(/\/+$/, '');
  }

  async complete(chat: ChatRequest, options: CompleteOptions = {}): Promise<ChatResult> {
    const params = geminiRequest(chat);
    return this.runner.run(options, (attempt) => this.attempt(params, attempt), classify(this.runner));
  }

  private async attempt(params: GenerateContentParameters, attempt: NativeAttempt): Promise<AttemptResult> {
    const client = new GoogleGenAI({
      // Explicit: the SDK would otherwise read GOOGLE_GENAI_USE_VERTEXAI and key variables of the environment.
      vertexai: false,
      apiKey: this.runner.apiKey ?? 'none',
      httpOptions: {
        baseUrl: this.origin,
        apiVersion: this.apiVersion,
        fetch: attempt.fetch,
        timeout: this.runner.timeoutMs * 2,
        // One attempt per call: retries are the executor's.
        retryOptions: { attempts: 1 },
      },
    });
    const request = { ...params, config: { ...params.config, abortSignal: attempt.signal } };
    if (!this.runner.stream) {
      const response = await client.models.generateContent(request);
      const turn = new CandidateAssembly();
      const { sink, flush } = wholeAnswer(attempt);
      turn.apply(response, sink);
      const result = turn.result(params);
      flush();
      return result;
    }
    const stream = await client.models.generateContentStream(request);
    const turn = new CandidateAssembly();
    for await (const chunk of stream) {
      attempt.touch();
      turn.apply(chunk, attempt);
      const waiting = attempt.backpressure?.();
      if (waiting !== undefined) await waiting;
    }
    return turn.result(params);
  }
}

class CandidateAssembly {
  private content = '';
  private reasoning = '';
  private readonly calls: ChatToolCall[] = [];
  private readonly signatures: GeminiSignatures = { calls: [] };
  private finish: string | undefined;
  private usage: GenerateContentResponse['usageMetadata'];
  private id: string | undefined;
  private model: string | undefined;
  private blocked: string | undefined;

  apply(chunk: GenerateContentResponse, attempt: NativeAttempt): void {
    this.id ??= chunk.responseId;
    this.model ??= chunk.modelVersion;
    if (chunk.usageMetadata) this.usage = chunk.usageMetadata;
    if (chunk.promptFeedback?.blockReason) this.blocked = chunk.promptFeedback.blockReason;
    const candidate = chunk.candidates?.[0];
    if (candidate === undefined) return;
    if (candidate.finishReason) this.finish = candidate.finishReason;
    for (const part of candidate.content?.parts ?? []) {
      if (part.functionCall) {
        const call: ChatToolCall = {
          id: part.functionCall.id || `call_${randomUUID().replaceAll('-', '')}`,
          type: 'function',
          function: {
            name: part.functionCall.name ?? '',
            arguments: JSON.stringify(part.functionCall.args ?? {}),
          },
        };
        // Gemini gives a call whole: its arguments go on as one piece.
        attempt.toolCallDelta({
          index: this.calls.length,
          id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        });
        this.calls.push(call);
        this.signatures.calls.push(part.thoughtSignature ?? null);
      } else if (part.thought && typeof part.text === 'string') {
        this.reasoning += part.text;
        attempt.reasoning(part.text);
      } else if (typeof part.text === 'string') {
        this.content += part.text;
        attempt.content(part.text);
        if (part.thoughtSignature) this.signatures.text = part.thoughtSignature;
      }
    }
  }

  result(params: GenerateContentParameters): AttemptResult {
    const message: AssistantReply = { role: 'assistant', content: this.content === '' ? null : this.content };
    if (this.calls.length > 0) message.tool_calls = this.calls;
    if (this.reasoning !== '') message.reasoning_content = this.reasoning;
    if (this.signatures.text !== undefined || this.signatures.calls.some((s) => s !== null)) {
      message.provider_state = { api: GEMINI_API, signatures: this.signatures };
    }
    const base = {
      message,
      finishReason: this.finishReason(),
      ...(this.id ? { responseId: this.id } : {}),
      ...(this.model ? { responseModel: this.model } : {}),
    };
    const usage = this.usage;
    if (!usage || usage.promptTokenCount === undefined) {
      return { ...base, usage: estimateUsage(JSON.stringify(params).length, message), usageReported: false };
    }
    const prompt = (usage.promptTokenCount ?? 0) + (usage.toolUsePromptTokenCount ?? 0);
    const completion = (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0);
    const tokens: TokenUsage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: usage.totalTokenCount ?? prompt + completion,
    };
    if ((usage.cachedContentTokenCount ?? 0) > 0) tokens.cache_read_tokens = usage.cachedContentTokenCount;
    return { ...base, usage: tokens };
  }

  private finishReason(): FinishReason {
    if (this.blocked !== undefined) return 'content_filter';
    if (this.finish === undefined) return null;
    if (this.finish === 'MAX_TOKENS') return 'length';
    if (FILTERED.has(this.finish)) return 'content_filter';
    if (this.finish === 'STOP') return this.calls.length > 0 ? 'tool_calls' : 'stop';
    return this.finish.toLowerCase();
  }
}

/** Gemini's HTTP errors: status from the SDK, the wait from the body's RetryInfo when no header gave one. */
function classify(runner: NativeCallRunner) {
  return (error: unknown): AttemptFailure | undefined => {
    if (!(error instanceof ApiError)) return undefined;
    const status = error.status;
    const text = runner.scrub(error.message);
    const retryable = isRetryableStatus(status);
    const retryAfterMs = retryable ? retryInfoMs(error.message) : undefined;
    return new AttemptFailure({
      retryable,
      reason: `HTTP ${status}: ${excerpt(text, 200)}`,
      status,
      body: excerpt(text),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  };
}

/** `google.rpc.RetryInfo.retryDelay` ("34.4s") from an error message quoting the JSON body. */
function retryInfoMs(message: string): number | undefined {
  const start = message.indexOf('{');
  if (start < 0) return undefined;
  try {
    const body = JSON.parse(message.slice(start)) as { error?: { details?: { retryDelay?: unknown }[] } };
    for (const detail of body.error?.details ?? []) {
      const delay =
        typeof detail.retryDelay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(detail.retryDelay) : null;
      if (delay?.[1] !== undefined) return Math.ceil(Number(delay[1]) * 1000);
    }
  } catch {
    // Not a JSON body: no hint.
  }
  return undefined;
}
