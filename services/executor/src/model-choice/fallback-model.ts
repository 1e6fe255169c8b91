/**
 * The agent's models as one model for the loop: each turn goes to the current model; when that model
 * stays unavailable after its client's retries (LlmUnavailableError: 429, 5xx, 529, connection failures,
 * first-byte and idle timeouts), the turn goes to the next one in the list, and later turns stay with the
 * model that answered. An error retrying cannot fix (400, 401, 403, a denied endpoint, an unreadable
 * answer) ends the turn at once: another model would be sent the same bad request. A stream that broke
 * after text was handed on does not move either (the text would be said twice).
 *
 * Before each call the model's key may have to wait for room under its shared limits
 * (shared-key-limits.ts); the wait is told once (a `model_waiting` event) and ends with the task's signal.
 */
import type { ModelLimits } from '@agentmesh/protocol';
import type { ChatModel } from '../agent-loop.js';
import {
  LlmUnavailableError,
  type ChatRequest,
  type ChatResult,
  type CompleteOptions,
} from '../llm/index.js';
import type { LimitWait, SharedKeyLimits } from './shared-key-limits.js';

export interface ModelChoice {
  /** The model name sent to the server, and named in the events. */
  name: string;
  temperature?: number;
  max_tokens?: number;
  /** Extended thinking's budget (the APIs that take one). */
  thinking_budget_tokens?: number;
  client: ChatModel;
  /** The key's shared limits, and the hash that names the key in the limits bucket. */
  limits?: { keyId: string; limits: ModelLimits };
}

export interface FallbackModelOptions {
  /** The model to start with (the one a resumed task's log says answered last); default 0. */
  startAt?: number;
  /** Where shared limits are held; without it, limits are not enforced. */
  keyLimits?: SharedKeyLimits;
  /** Told when a call waits for room under its key's limits. */
  onWaiting?: (wait: LimitWait & { model: string }) => void;
  /** Told when a model stays unavailable and the next one takes the turn. */
  onFallback?: (from: { model: string; index: number }, error: LlmUnavailableError) => void;
}

export class FallbackModel implements ChatModel {
  private current: number;

  constructor(
    private readonly choices: readonly ModelChoice[],
    private readonly options: FallbackModelOptions = {},
  ) {
    if (choices.length === 0) throw new RangeError('a fallback model needs at least one model');
    this.current = Math.min(Math.max(0, options.startAt ?? 0), choices.length - 1);
  }

  async complete(request: ChatRequest, options: CompleteOptions = {}): Promise<ChatResult> {
    let delivered = false;
    const tracked: CompleteOptions = {
      ...options,
      onContentDelta: (delta) => {
        delivered = true;
        options.onContentDelta?.(delta);
      },
      onReasoningDelta: (delta) => {
        delivered = true;
        options.onReasoningDelta?.(delta);
      },
      // Tool-call argument deltas shown to the client count as delivered too (the next model would repeat them).
      ...(options.onToolCallDelta === undefined
        ? {}
        : {
            onToolCallDelta: (delta: Parameters<NonNullable<CompleteOptions['onToolCallDelta']>>[0]) => {
              delivered = true;
              options.onToolCallDelta?.(delta);
            },
          }),
    };
    const onToolCallDelta = options.onToolCallDelta;
    if (onToolCallDelta !== undefined)
      tracked.onToolCallDelta = (delta) => {
        delivered = true;
        onToolCallDelta(delta);
      };
    for (;;) {
      const index = this.current;
      const choice = this.choices[index];
      if (choice === undefined) throw new RangeError(`no model at ${index}`);
      try {
        const result = await this.call(choice, request, tracked);
        return {
          ...result,
          answeredBy: this.choices.length > 1 ? { model: choice.name, index } : { model: choice.name },
        };
      } catch (error) {
        const last = index === this.choices.length - 1;
        if (!(error instanceof LlmUnavailableError) || delivered || last || options.signal?.aborted) {
          throw error;
        }
        this.options.onFallback?.({ model: choice.name, index }, error);
        this.current = index + 1;
      }
    }
  }

  private async call(
    choice: ModelChoice,
    request: ChatRequest,
    options: CompleteOptions,
  ): Promise<ChatResult> {
    const { temperature: _t, max_tokens: _m, thinking_budget_tokens: _b, ...rest } = request;
    const sent: ChatRequest = {
      ...rest,
      model: choice.name,
      ...(choice.temperature === undefined ? {} : { temperature: choice.temperature }),
      ...(choice.max_tokens === undefined ? {} : { max_tokens: choice.max_tokens }),
      ...(choice.thinking_budget_tokens === undefined
        ? {}
        : { thinking_budget_tokens: choice.thinking_budget_tokens }),
    };
    const keyLimits = this.options.keyLimits;
    if (choice.limits === undefined || keyLimits === undefined) return choice.client.complete(sent, options);
    const lease = await keyLimits.acquire(
      choice.limits.keyId,
      choice.limits.limits,
      options.signal ?? new AbortController().signal,
      (wait) => this.options.onWaiting?.({ ...wait, model: choice.name }),
    );
    let used = 0;
    try {
      const result = await choice.client.complete(sent, options);
      used = result.usage.total_tokens;
      return result;
    } finally {
      await lease.release(used);
    }
  }
}
