/**
 * A chat model that speaks the `<ACTION>`/`<OBSERVATION>` protocol (seed 003 §3–§4) behind the ordinary
 * function-calling contract, for models without native tool calls. The loop cannot tell the difference,
 * so the task's events are the same as with native calls:
 *
 * - out: the request's `tools` are described in the system prompt instead, and earlier tool calls and
 *   results are written back as the ACTION and OBSERVATION texts the model wrote and read;
 * - in: the reply's ACTION blocks become `tool_calls`, with the tool's function name and its inputs as
 *   JSON arguments typed by the parameter schema; only the prose around them is streamed on.
 *
 * What the model can get wrong reaches it as an observation while the task goes on. An unknown tool id or
 * an input that is not valid JSON still becomes a tool call, which the loop answers with its tool error
 * (NOT_FOUND, INVALID_REQUEST) and the next request shows as a failure observation. An ACTION block that
 * cannot be read at all is answered here: the model is asked again with a failure observation for each
 * broken block, and nothing of that reply runs; after `maxRepairs` such retries its prose is the answer.
 */
import { randomUUID } from 'node:crypto';
import type { ChatMessage, ChatToolCall, TokenUsage, ToolDefinition } from '@agentmesh/protocol';
import type { ChatModel } from '../agent-loop.js';
import type { ChatRequest, ChatResult, CompleteOptions } from '../llm/index.js';
import { toToolArguments } from './action-inputs.js';
import type { ParsedAction } from './action-parser.js';
import { ActionScanner, type ScannedAction } from './action-scanner.js';
import { actionFormatObservation, observationBlock } from './observation-format.js';
import { ToolCatalogue } from './tool-catalogue.js';
import { toXmlConversation } from './xml-conversation.js';
import { addUsage } from '../token-usage.js';

export interface XmlToolProtocolOptions {
  /** The task's tool definitions; only their source ids are read, to name the tools in ACTION blocks. */
  tools?: readonly ToolDefinition[];
  /** Times one `complete` asks the model again after ACTION blocks it could not read. Default 2. */
  maxRepairs?: number;
  /** Ids for the tool calls made from ACTION blocks. Default `call_<random>`. */
  newCallId?: () => string;
}

const DEFAULT_MAX_REPAIRS = 2;

export class XmlToolProtocolModel implements ChatModel {
  readonly #model: ChatModel;
  readonly #definitions: readonly ToolDefinition[];
  readonly #maxRepairs: number;
  readonly #newCallId: () => string;

  constructor(model: ChatModel, options: XmlToolProtocolOptions = {}) {
    this.#model = model;
    this.#definitions = options.tools ?? [];
    this.#maxRepairs = options.maxRepairs ?? DEFAULT_MAX_REPAIRS;
    if (!Number.isInteger(this.#maxRepairs) || this.#maxRepairs < 0) {
      throw new RangeError(`maxRepairs must be a non-negative integer, got ${options.maxRepairs}`);
    }
    this.#newCallId = options.newCallId ?? (() => `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`);
  }

  async complete(request: ChatRequest, options: CompleteOptions = {}): Promise<ChatResult> {
    const catalogue = new ToolCatalogue(request.tools ?? [], this.#definitions);
    // The model is told about tools in its prompt; the chat API's own tool settings would contradict that.
    const {
      tools: _tools,
      tool_choice: _choice,
      parallel_tool_calls: _parallel,
      messages,
      ...settings
    } = request;
    let conversation = toXmlConversation(messages, catalogue);
    const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    let attempts = 0;
    // One estimated reply makes the sum an estimate.
    let usageReported = true;

    for (let repairs = 0; ; repairs++) {
      const reply = await this.#completeOnce({ ...settings, messages: conversation }, options);
      addUsage(usage, reply.result.usage);
      attempts += reply.result.attempts;
      if (reply.result.usageReported === false) usageReported = false;
      const { result: last, scanner } = reply;
      const result = usageReported ? last : { ...last, usageReported: false };
      const broken = scanner.actions.filter((action): action is ScannedAction & { ok: false } => !action.ok);
      if (scanner.actions.length === 0) return { ...result, usage, attempts };
      if (broken.length === 0) {
        const calls = scanner.actions.flatMap((scanned) =>
          scanned.ok ? [this.#toolCall(scanned.action, catalogue)] : [],
        );
        const prose = scanner.prose.trim() === '' ? null : scanner.prose;
        const message = {
          ...result.message,
          content: prose,
          tool_calls: [...(result.message.tool_calls ?? []), ...calls],
        };
        return { ...result, message, finishReason: 'tool_calls', usage, attempts };
      }
      if (repairs >= this.#maxRepairs) {
        // What was streamed is what the task ends with: the prose, without the blocks it could not read.
        return { ...result, message: { ...result.message, content: scanner.prose }, usage, attempts };
      }
      const count = scanner.actions.length;
      const observations = broken.map((action) =>
        observationBlock(actionFormatObservation(action.toolId, action.problem, count)),
      );
      conversation = [
        ...conversation,
        { role: 'assistant', content: result.message.content ?? '' },
        { role: 'user', content: observations.join('\n') } satisfies ChatMessage,
      ];
    }
  }

  /** One model call with its text run through a fresh scanner; only prose reaches `onContentDelta`. */
  async #completeOnce(
    request: ChatRequest,
    options: CompleteOptions,
  ): Promise<{ result: ChatResult; scanner: ActionScanner }> {
    const scanner = new ActionScanner();
    let scanned = '';
    const forward = (prose: string) => {
      if (prose !== '') options.onContentDelta?.(prose);
    };
    const result = await this.#model.complete(request, {
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.onReasoningDelta === undefined ? {} : { onReasoningDelta: options.onReasoningDelta }),
      ...(options.backpressure === undefined ? {} : { backpressure: options.backpressure }),
      onContentDelta: (delta) => {
        scanned += delta;
        forward(scanner.push(delta));
      },
    });
    // A client that did not stream (or not all of it) still has the whole text in its answer.
    const text = result.message.content ?? '';
    if (text.length > scanned.length && text.startsWith(scanned))
      forward(scanner.push(text.slice(scanned.length)));
    forward(scanner.finish());
    return { result, scanner };
  }

  #toolCall(action: ParsedAction, catalogue: ToolCatalogue): ChatToolCall {
    const tool = catalogue.resolve(action.toolId);
    // An unknown id is passed on as the name: the loop answers it with NOT_FOUND, as for a native call.
    const name = tool?.name ?? action.toolId;
    const args = toToolArguments(action.inputs, tool?.parameters);
    return { id: this.#newCallId(), type: 'function', function: { name, arguments: JSON.stringify(args) } };
  }
}
