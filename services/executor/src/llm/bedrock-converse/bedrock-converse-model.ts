/**
 * Amazon Bedrock's Converse API (`POST <base_url>/model/<model>/converse-stream`, streamed in the binary
 * `application/vnd.amazon.eventstream` framing) behind the loop's model interface, through the official
 * SDK (`@aws-sdk/client-bedrock-runtime`): the SDK signs (SigV4) and reads the wire; this adapter turns its
 * stream events into the assistant turn: text and reasoning handed on as they come, `toolUse` blocks into
 * tool calls (keyed by block index, so interleaved blocks stay apart) with their input deltas handed on,
 * signed reasoning kept on the turn (`provider_state`) for the next request, `stopReason` mapped to the
 * loop's finish reasons, and usage with cache reads and writes.
 *
 * The SDK sends through a request handler of ours that uses the native runner's guarded fetch (the SSRF
 * guard's undici dispatcher, the attempt's deadline), never its own HTTP/2 client; its retries are off
 * (`maxAttempts: 1`) and its credentials are the vault's only, so nothing is read from the executor's
 * environment or `~/.aws` (no bearer token from `AWS_BEARER_TOKEN_BEDROCK` either: SigV4 is the only
 * scheme offered). With the model config's `stream: false` (`POST .../converse`, `ConverseCommand`) the
 * whole message is fed through the same assembly as the events a stream of it would carry.
 *
 * `base_url` is the runtime endpoint (`https://bedrock-runtime.us-east-1.amazonaws.com`).
 */
import { Readable } from 'node:stream';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  type ConverseCommandOutput,
  type ConverseStreamCommandInput,
  type ConverseStreamOutput,
  type ReasoningContentBlockDelta,
} from '@aws-sdk/client-bedrock-runtime';
import type { ChatToolCall, TokenUsage } from '@agentmesh/protocol';
import { AttemptFailure, excerpt } from '../attempt-failure.js';
import type {
  AssistantReply,
  ChatRequest,
  ChatResult,
  CompleteOptions,
  FinishReason,
} from '../chat-types.js';
import { LlmResponseError } from '../errors.js';
import {
  NativeCallRunner,
  wholeAnswer,
  type AttemptResult,
  type NativeAttempt,
  type NativeModelOptions,
} from '../native/native-call.js';
import { isRetryableStatus } from '../retry-policy.js';
import { estimateUsage } from '../usage-estimate.js';
import { parseAwsCredentials, regionOfEndpoint, type AwsCredentials } from './bedrock-credentials.js';
import { BEDROCK_API, bedrockRequest, type KeptReasoning } from './bedrock-request.js';

/** `stopReason` in the loop's words (`length` and `content_filter` are what it acts on). */
const FINISH_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};

/** Bedrock's errors worth another try (load, not the request), and the HTTP status each stands for. */
const RETRYABLE_ERRORS: Record<string, number | undefined> = {
  ThrottlingException: 429,
  ServiceUnavailableException: 503,
  InternalServerException: 500,
  ModelStreamErrorException: undefined,
  ModelNotReadyException: 429,
  ModelTimeoutException: 408,
};

const DEFAULT_REGION = 'us-east-1';

export class BedrockConverseModel {
  private readonly runner: NativeCallRunner;
  private readonly endpoint: string;
  private readonly credentials: AwsCredentials | undefined;
  private readonly region: string;
  /** The attempt each in-flight request belongs to, found by the signal the SDK hands the handler. */
  private readonly attempts = new Map<AbortSignal, NativeAttempt>();
  private client: BedrockRuntimeClient | undefined;

  constructor(options: NativeModelOptions) {
    this.credentials = parseAwsCredentials(options.apiKey);
    // The runner scrubs the vault value; the parts alone are scrubbed here and by the task's scrubber.
    this.runner = new NativeCallRunner(options);
    this.endpoint = options.baseUrl.replace(/\/+$/, '');
    this.region = this.credentials?.region ?? regionOfEndpoint(options.baseUrl) ?? DEFAULT_REGION;
  }

  async complete(chat: ChatRequest, options: CompleteOptions = {}): Promise<ChatResult> {
    if (this.credentials === undefined) {
      throw new LlmResponseError(
        'model call failed: a bedrock-converse model needs AWS credentials in its key credential ({"access_key_id", "secret_access_key", "session_token"?})',
        { reason: 'no AWS credentials in the vault', attempts: 0 },
      );
    }
    const body = bedrockRequest(chat);
    return this.runner.run(options, (attempt) => this.attempt(body, attempt), classify(this.scrub));
  }

  /** The vault value and each of its parts out of every text quoted from an error. */
  private readonly scrub = (text: string): string => {
    let scrubbed = this.runner.scrub(text);
    const parts = this.credentials;
    if (parts === undefined) return scrubbed;
    for (const part of [parts.secret_access_key, parts.session_token, parts.access_key_id]) {
      if (part) scrubbed = scrubbed.replaceAll(part, '[redacted]');
    }
    return scrubbed;
  };

  private async attempt(body: ConverseStreamCommandInput, attempt: NativeAttempt): Promise<AttemptResult> {
    const client = this.clientOf();
    this.attempts.set(attempt.signal, attempt);
    try {
      if (!this.runner.stream) {
        const whole = await client.send(new ConverseCommand(body), { abortSignal: attempt.signal });
        const turn = new TurnAssembly();
        const { sink, flush } = wholeAnswer(attempt);
        for (const event of eventsOf(whole)) turn.apply(event, sink);
        const result = turn.result(body);
        flush();
        return result;
      }
      const response = await client.send(new ConverseStreamCommand(body), { abortSignal: attempt.signal });
      const turn = new TurnAssembly();
      for await (const event of response.stream ?? []) {
        attempt.touch();
        turn.apply(event, attempt);
        const waiting = attempt.backpressure?.();
        if (waiting !== undefined) await waiting;
      }
      return turn.result(body);
    } finally {
      this.attempts.delete(attempt.signal);
    }
  }

  /** One SDK client per model (its configuration resolved once); each request finds its attempt's fetch. */
  private clientOf(): BedrockRuntimeClient {
    if (this.client !== undefined) return this.client;
    const credentials = this.credentials;
    if (credentials === undefined) throw new Error('no AWS credentials');
    this.client = new BedrockRuntimeClient({
      endpoint: this.endpoint,
      region: this.region,
      credentials: {
        accessKeyId: credentials.access_key_id,
        secretAccessKey: credentials.secret_access_key,
        ...(credentials.session_token === undefined ? {} : { sessionToken: credentials.session_token }),
      },
      // SigV4 with the vault's keys is the only scheme: never a bearer token from the environment.
      authSchemePreference: ['sigv4'],
      httpAuthSchemeProvider: (parameters) => [
        {
          schemeId: 'aws.auth#sigv4',
          signingProperties: { name: 'bedrock', region: parameters.region },
          propertiesExtractor: (config, context) => ({ signingProperties: { config, context } }),
        },
      ],
      maxAttempts: 1,
      retryMode: 'standard',
      defaultsMode: 'standard',
      useFipsEndpoint: false,
      useDualstackEndpoint: false,
      userAgentAppId: async () => undefined,
      requestHandler: new GuardedRequestHandler((signal) => this.attempts.get(signal)),
    });
    return this.client;
  }
}

interface SdkHttpRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}

/**
 * The SDK's HTTP handler: sends its (signed) request with the attempt's guarded fetch and hands the
 * answer's body back as a Node stream, which the SDK's event-stream reader and error parser read.
 */
class GuardedRequestHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' };

  constructor(private readonly attemptOf: (signal: AbortSignal) => NativeAttempt | undefined) {}

  async handle(
    request: SdkHttpRequest,
    options: { abortSignal?: AbortSignal | { aborted: boolean } } = {},
  ): Promise<{
    response: { statusCode: number; reason?: string; headers: Record<string, string>; body: unknown };
  }> {
    const signal = options.abortSignal instanceof AbortSignal ? options.abortSignal : undefined;
    const attempt = signal === undefined ? undefined : this.attemptOf(signal);
    if (attempt === undefined) throw new Error('a Bedrock request outside a model call attempt');
    const url = new URL(`${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ''}`);
    url.pathname = request.path;
    for (const [key, value] of Object.entries(request.query ?? {})) {
      for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(key, item ?? '');
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      // fetch sets both from the URL and the body (the same values the signature covers).
      if (name.toLowerCase() !== 'host' && name.toLowerCase() !== 'content-length') headers.set(name, value);
    }
    const response = await attempt.fetch(url, {
      method: request.method,
      headers,
      ...(request.body === undefined ? {} : { body: request.body as RequestInit['body'] & object }),
      signal: attempt.signal,
      redirect: 'manual',
    });
    const responseHeaders: Record<string, string> = {};
    response.headers.forEach((value, name) => (responseHeaders[name] = value));
    const body =
      response.body === null
        ? Readable.from([])
        : Readable.fromWeb(response.body as Parameters<typeof Readable.fromWeb>[0]);
    return {
      response: { statusCode: response.status, reason: response.statusText, headers: responseHeaders, body },
    };
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  destroy(): void {}
}

interface BlockParts {
  text: string;
  reasoning: string;
  signature?: string;
  redacted?: string;
  toolUseId?: string;
  name?: string;
  input: string;
}

/** A whole Converse answer as the events a stream of it would carry, each block in one delta. */
function eventsOf(output: ConverseCommandOutput): ConverseStreamOutput[] {
  const events: ConverseStreamOutput[] = [{ messageStart: { role: 'assistant' } }];
  (output.output?.message?.content ?? []).forEach((block, contentBlockIndex) => {
    if (block.toolUse !== undefined) {
      const { toolUseId, name, input } = block.toolUse;
      events.push({ contentBlockStart: { contentBlockIndex, start: { toolUse: { toolUseId, name } } } });
      const args = JSON.stringify(input ?? {});
      events.push({ contentBlockDelta: { contentBlockIndex, delta: { toolUse: { input: args } } } });
    } else if (block.text !== undefined) {
      events.push({ contentBlockDelta: { contentBlockIndex, delta: { text: block.text } } });
    } else if (block.reasoningContent !== undefined) {
      const { reasoningText, redactedContent } = block.reasoningContent;
      const deltas: ReasoningContentBlockDelta[] = [];
      if (redactedContent !== undefined) deltas.push({ redactedContent });
      if (reasoningText?.text !== undefined) deltas.push({ text: reasoningText.text });
      if (reasoningText?.signature !== undefined) deltas.push({ signature: reasoningText.signature });
      for (const reasoningContent of deltas)
        events.push({ contentBlockDelta: { contentBlockIndex, delta: { reasoningContent } } });
    }
  });
  events.push({ messageStop: { stopReason: output.stopReason } });
  if (output.usage !== undefined) events.push({ metadata: { usage: output.usage, metrics: undefined } });
  return events;
}

/** The stream's events put together into one assistant turn. */
class TurnAssembly {
  private readonly blocks = new Map<number, BlockParts>();
  /** Tool calls by block index: their position in the turn, in the order they started. */
  private readonly toolIndex = new Map<number, number>();
  private stopReason: string | null = null;
  private usage: TokenUsage | undefined;
  private started = false;

  apply(event: ConverseStreamOutput, attempt: NativeAttempt): void {
    const thrown = streamException(event);
    if (thrown !== undefined) throw thrown;
    if (event.messageStart !== undefined) {
      this.started = true;
    } else if (event.contentBlockStart !== undefined) {
      this.started = true;
      const { contentBlockIndex, start } = event.contentBlockStart;
      const parts = this.block(contentBlockIndex ?? 0);
      const toolUse = start?.toolUse;
      if (toolUse !== undefined) {
        parts.toolUseId = toolUse.toolUseId;
        parts.name = toolUse.name;
        const index = this.callIndex(contentBlockIndex ?? 0);
        attempt.toolCallDelta({
          index,
          ...(toolUse.toolUseId === undefined ? {} : { id: toolUse.toolUseId }),
          ...(toolUse.name === undefined ? {} : { name: toolUse.name }),
          arguments: '',
        });
      }
    } else if (event.contentBlockDelta !== undefined) {
      this.started = true;
      const { contentBlockIndex, delta } = event.contentBlockDelta;
      if (delta === undefined) return;
      const parts = this.block(contentBlockIndex ?? 0);
      if (delta.text !== undefined) {
        parts.text += delta.text;
        attempt.content(delta.text);
      } else if (delta.toolUse !== undefined) {
        const piece = delta.toolUse.input ?? '';
        parts.input += piece;
        attempt.toolCallDelta({ index: this.callIndex(contentBlockIndex ?? 0), arguments: piece });
      } else if (delta.reasoningContent !== undefined) {
        const reasoning = delta.reasoningContent;
        if (reasoning.text !== undefined) {
          parts.reasoning += reasoning.text;
          attempt.reasoning(reasoning.text);
        }
        if (reasoning.signature !== undefined)
          parts.signature = (parts.signature ?? '') + reasoning.signature;
        if (reasoning.redactedContent !== undefined) {
          parts.redacted = (parts.redacted ?? '') + Buffer.from(reasoning.redactedContent).toString('base64');
        }
      }
    } else if (event.messageStop !== undefined) {
      this.stopReason = event.messageStop.stopReason ?? null;
    } else if (event.metadata !== undefined) {
      const usage = event.metadata.usage;
      if (usage !== undefined) {
        // Bedrock's inputTokens leaves cached tokens out (its totalTokens adds them): the prompt is all three.
        const read = usage.cacheReadInputTokens ?? 0;
        const written = usage.cacheWriteInputTokens ?? 0;
        const prompt = (usage.inputTokens ?? 0) + read + written;
        const completion = usage.outputTokens ?? 0;
        this.usage = {
          prompt_tokens: prompt,
          completion_tokens: completion,
          total_tokens: prompt + completion,
        };
        if (read > 0) this.usage.cache_read_tokens = read;
        if (written > 0) this.usage.cache_write_tokens = written;
      }
    }
  }

  result(request: ConverseStreamCommandInput): AttemptResult {
    if (!this.started)
      throw new AttemptFailure({ retryable: false, reason: 'the answer has no content events' });
    let content = '';
    let reasoning = '';
    const calls: { index: number; call: ChatToolCall }[] = [];
    const kept: KeptReasoning[] = [];
    for (const [blockIndex, block] of [...this.blocks.entries()].sort(([a], [b]) => a - b)) {
      content += block.text;
      if (block.reasoning !== '' || block.signature !== undefined) {
        reasoning += block.reasoning;
        kept.push({
          text: block.reasoning,
          ...(block.signature === undefined ? {} : { signature: block.signature }),
        });
      }
      if (block.redacted !== undefined) kept.push({ redacted: block.redacted });
      if (block.toolUseId !== undefined && block.name !== undefined) {
        calls.push({
          index: this.toolIndex.get(blockIndex) ?? calls.length,
          call: {
            id: block.toolUseId,
            type: 'function',
            function: { name: block.name, arguments: block.input === '' ? '{}' : block.input },
          },
        });
      }
    }
    const message: AssistantReply = { role: 'assistant', content: content === '' ? null : content };
    if (calls.length > 0)
      message.tool_calls = calls.sort((a, b) => a.index - b.index).map(({ call }) => call);
    if (reasoning !== '') message.reasoning_content = reasoning;
    if (kept.length > 0) message.provider_state = { api: BEDROCK_API, reasoning: kept };
    const finishReason: FinishReason =
      this.stopReason === null ? null : (FINISH_REASONS[this.stopReason] ?? this.stopReason);
    if (this.usage === undefined) {
      return {
        message,
        finishReason,
        usage: estimateUsage(JSON.stringify(request).length, message),
        usageReported: false,
      };
    }
    return { message, finishReason, usage: this.usage };
  }

  private block(index: number): BlockParts {
    let parts = this.blocks.get(index);
    if (parts === undefined) {
      parts = { text: '', reasoning: '', input: '' };
      this.blocks.set(index, parts);
    }
    return parts;
  }

  private callIndex(blockIndex: number): number {
    let index = this.toolIndex.get(blockIndex);
    if (index === undefined) {
      index = this.toolIndex.size;
      this.toolIndex.set(blockIndex, index);
    }
    return index;
  }
}

/** An exception member of the stream union (some SDK versions yield them instead of throwing). */
function streamException(event: ConverseStreamOutput): unknown {
  const record = event as unknown as Record<string, unknown>;
  for (const key of [
    'internalServerException',
    'modelStreamErrorException',
    'validationException',
    'throttlingException',
    'serviceUnavailableException',
  ]) {
    const value = record[key];
    if (value !== undefined) {
      const name = key.charAt(0).toUpperCase() + key.slice(1);
      const message = (value as { message?: unknown }).message;
      return Object.assign(new Error(typeof message === 'string' ? message : name), { name });
    }
  }
  return undefined;
}

/**
 * Bedrock's errors by their name (HTTP ones and those sent inside the stream): load (throttling, service
 * unavailable, a model stream error) is retried, the request's own faults are not.
 */
function classify(scrub: (text: string) => string) {
  return (error: unknown): AttemptFailure | undefined => {
    if (!(error instanceof Error)) return undefined;
    const metadata = (error as { $metadata?: { httpStatusCode?: unknown } }).$metadata;
    const httpStatus = typeof metadata?.httpStatusCode === 'number' ? metadata.httpStatusCode : undefined;
    const fault = (error as { $fault?: unknown }).$fault;
    if (httpStatus === undefined && fault === undefined && !(error.name in RETRYABLE_ERRORS))
      return undefined;
    const text = scrub(error.message);
    const known = error.name in RETRYABLE_ERRORS;
    const status = httpStatus ?? RETRYABLE_ERRORS[error.name];
    const retryable = known || (status !== undefined && isRetryableStatus(status));
    const where =
      httpStatus === undefined || httpStatus === 200 ? 'the stream reported' : `HTTP ${httpStatus}`;
    return new AttemptFailure({
      retryable,
      reason: `${where} ${error.name}: ${excerpt(text, 200)}`,
      ...(status === undefined || status === 200 ? {} : { status }),
      body: excerpt(text),
    });
  };
}
