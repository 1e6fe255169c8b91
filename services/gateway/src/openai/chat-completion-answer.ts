/**
 * A task's events as OpenAI chat-completions answers: the `chat.completion` object of a non-streamed
 * request and the `chat.completion.chunk`s of a streamed one. The id is `chatcmpl-<trace_id>`, so a
 * client can follow or cancel the task through the task API too; `model` is the agent's workflow id.
 *
 * Text: a streamed answer carries every `message_chunk` delta (text the model wrote before a tool call
 * included); a non-streamed one carries the final answer of the `done` event. The model's reasoning
 * (`tool_thinking`) is `reasoning_content`, as DeepSeek-compatible servers send it. Tool calls run inside
 * the mesh and never appear as OpenAI `tool_calls` (a client would try to run them): they are reported in
 * an `agentmesh` extension field instead, which clients ignore — on a chunk with an empty delta per
 * `tool_start` / `tool_result`, and as `agentmesh.tool_calls` of a non-streamed completion.
 *
 * The finish reason is `stop`, or `length` / `content_filter` when the task's answer was cut or filtered
 * (`done.truncated`).
 *
 * A resumed attempt (`attempt_started`) voids an earlier attempt's text: a non-streamed completion's
 * reasoning is folded with TaskTranscript (its content is `done`'s message anyway); a streamed one's text
 * goes through StreamedText (streamed-text.ts).
 */
import { TaskTranscript, type DoneEvent, type TaskEvent, type TokenUsage } from '@agentmesh/protocol';

export interface CompletionIdentity {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
}

export function completionIdentity(traceId: string, workflowId: string, at: Date): CompletionIdentity {
  return { id: `chatcmpl-${traceId}`, created: Math.floor(at.getTime() / 1000), model: workflowId };
}

export interface ChunkDelta {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
}

/** `length` / `content_filter` when the task's answer was cut or filtered (`done.truncated`), else `stop`. */
export type AnswerFinishReason = 'stop' | 'length' | 'content_filter';

export function finishReasonOf(done: DoneEvent): AnswerFinishReason {
  const reason = done.data.finish_reason;
  return done.data.truncated === true && (reason === 'length' || reason === 'content_filter')
    ? reason
    : 'stop';
}

export interface ChatCompletionChunk extends CompletionIdentity {
  object: 'chat.completion.chunk';
  choices: { index: 0; delta: ChunkDelta; finish_reason: AnswerFinishReason | null }[];
  usage?: TokenUsage;
  agentmesh?: Record<string, unknown>;
}

/** One tool call the agent made, as the `agentmesh` extension reports it. */
export interface ReportedToolCall {
  call_id: string;
  tool: string;
  arguments: unknown;
  ok?: boolean;
  result?: unknown;
  error?: unknown;
  duration_ms?: number;
}

export interface ChatCompletion extends CompletionIdentity {
  object: 'chat.completion';
  choices: {
    index: 0;
    message: { role: 'assistant'; content: string; refusal: null; reasoning_content?: string };
    finish_reason: AnswerFinishReason;
    logprobs: null;
  }[];
  usage: TokenUsage;
  agentmesh: { trace_id: string; steps: number; duration_ms: number; tool_calls: ReportedToolCall[] };
}

export function chunk(
  identity: CompletionIdentity,
  delta: ChunkDelta,
  extra: { finishReason?: AnswerFinishReason; agentmesh?: Record<string, unknown> } = {},
): ChatCompletionChunk {
  return {
    ...identity,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: extra.finishReason ?? null }],
    ...(extra.agentmesh !== undefined ? { agentmesh: extra.agentmesh } : {}),
  };
}

/** The first chunk: the assistant's role, before the task has said anything. */
export function openingChunk(identity: CompletionIdentity, traceId: string): ChatCompletionChunk {
  return chunk(identity, { role: 'assistant', content: '' }, { agentmesh: { trace_id: traceId } });
}

/**
 * The chunks one non-terminal event becomes (none for an empty delta). The terminal events are the
 * stream writer's: `done` is {@link finishingChunks}, `error` an error body.
 */
export function eventChunks(identity: CompletionIdentity, event: TaskEvent): ChatCompletionChunk[] {
  switch (event.type) {
    case 'message_chunk':
      return event.data.delta === '' ? [] : [chunk(identity, { content: event.data.delta })];
    case 'tool_thinking':
      return event.data.delta === '' ? [] : [chunk(identity, { reasoning_content: event.data.delta })];
    case 'tool_start':
    case 'tool_result':
      return [chunk(identity, {}, { agentmesh: { event: event.type, ...event.data } })];
    default:
      return [];
  }
}

/** The finishing chunk, and the usage chunk (no choices) when the client asked for it. */
export function finishingChunks(
  identity: CompletionIdentity,
  done: DoneEvent,
  includeUsage: boolean,
): ChatCompletionChunk[] {
  const finishing = chunk(
    identity,
    {},
    {
      finishReason: finishReasonOf(done),
      agentmesh: { steps: done.data.steps, duration_ms: done.data.duration_ms },
    },
  );
  if (!includeUsage) return [finishing];
  return [finishing, { ...identity, object: 'chat.completion.chunk', choices: [], usage: done.data.usage }];
}

/** Gathers a task's events into the one `chat.completion` of a non-streamed request. */
export class CompletionCollector {
  private readonly toolCalls = new Map<string, ReportedToolCall>();
  /** The reasoning, without what a dead attempt thought before a new one took over. */
  private readonly transcript = new TaskTranscript();

  constructor(
    private readonly identity: CompletionIdentity,
    private readonly traceId: string,
  ) {}

  add(event: TaskEvent): void {
    this.transcript.add(event);
    if (event.type === 'tool_start') {
      const { call_id, tool, arguments: args } = event.data;
      this.toolCalls.set(call_id, { call_id, tool, arguments: args });
    } else if (event.type === 'tool_result') {
      const { call_id, tool, ok, duration_ms } = event.data;
      const outcome = event.data.ok ? { result: event.data.result } : { error: event.data.error };
      const started = this.toolCalls.get(call_id) ?? { call_id, tool, arguments: undefined };
      this.toolCalls.set(call_id, { ...started, ok, ...outcome, duration_ms });
    }
  }

  completion(done: DoneEvent): ChatCompletion {
    return {
      ...this.identity,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: done.data.message,
            refusal: null,
            ...(this.transcript.reasoning !== '' ? { reasoning_content: this.transcript.reasoning } : {}),
          },
          finish_reason: finishReasonOf(done),
          logprobs: null,
        },
      ],
      usage: done.data.usage,
      agentmesh: {
        trace_id: this.traceId,
        steps: done.data.steps,
        duration_ms: done.data.duration_ms,
        tool_calls: [...this.toolCalls.values()],
      },
    };
  }
}
