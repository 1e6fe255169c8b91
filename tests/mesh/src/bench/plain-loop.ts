/**
 * The benchmark's floor: the same task as a hand-written in-process loop over undici — stream the
 * model's turn, run the tool calls it asked for (in parallel, as HTTP GETs), stream the next turn —
 * with no NATS, no services, no events. Each content delta counts as one chunk reaching the caller,
 * as a `message_chunk` event does for a mesh client. What the mesh adds is measured against this.
 */
import { performance } from 'node:perf_hooks';
import { SseParser, type SseMessage } from '@agentmesh/sse';
import { request } from 'undici';
import { LOOKUP_TOOL } from './workloads.js';

interface StreamedToolCall {
  id: string;
  name: string;
  arguments: string;
}

interface ChunkDelta {
  content?: string | null;
  tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
}

export interface PlainTaskResult {
  answer: string;
  /** Content deltas streamed to the caller. */
  messageChunks: number;
  /** From the start of the task to the first content delta, in ms. */
  firstChunkMs: number | undefined;
}

const TOOLS = [{ type: 'function', function: LOOKUP_TOOL }];
const MAX_STEPS = 4;

export async function runPlainTask(options: {
  modelBaseUrl: string;
  toolUrl: string;
  userText: string;
}): Promise<PlainTaskResult> {
  const started = performance.now();
  const result: PlainTaskResult = { answer: '', messageChunks: 0, firstChunkMs: undefined };
  const onContent = (): void => {
    result.messageChunks += 1;
    result.firstChunkMs ??= performance.now() - started;
  };
  const messages: unknown[] = [{ role: 'user', content: options.userText }];
  for (let step = 0; step < MAX_STEPS; step++) {
    const turn = await streamTurn(options.modelBaseUrl, messages, onContent);
    if (turn.toolCalls.length === 0) {
      result.answer = turn.content;
      return result;
    }
    messages.push({
      role: 'assistant',
      content: turn.content || null,
      tool_calls: turn.toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    const results = await Promise.all(
      turn.toolCalls.map(async (call) => {
        const args = JSON.parse(call.arguments) as Record<string, string>;
        const tool = await request(`${options.toolUrl}?${new URLSearchParams(args).toString()}`);
        const text = await tool.body.text();
        if (tool.statusCode !== 200)
          throw new Error(`tool ${call.name} answered ${tool.statusCode}: ${text}`);
        return { role: 'tool', tool_call_id: call.id, content: text };
      }),
    );
    messages.push(...results);
  }
  throw new Error(`plain loop did not finish in ${MAX_STEPS} steps`);
}

/** One streamed model turn: its text and its tool calls, assembled from the deltas. */
export async function streamTurn(
  modelBaseUrl: string,
  messages: readonly unknown[],
  onContent: (delta: string) => void,
): Promise<{ content: string; toolCalls: StreamedToolCall[] }> {
  const response = await request(`${modelBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', messages, tools: TOOLS, stream: true }),
  });
  if (response.statusCode !== 200) {
    throw new Error(`model answered ${response.statusCode}: ${await response.body.text()}`);
  }
  let content = '';
  const toolCalls: StreamedToolCall[] = [];
  const take = (message: SseMessage): void => {
    if (message.data === '[DONE]') return;
    const delta = (JSON.parse(message.data) as { choices: { delta?: ChunkDelta }[] }).choices[0]?.delta;
    if (!delta) return;
    if (delta.content) {
      content += delta.content;
      onContent(delta.content);
    }
    for (const piece of delta.tool_calls ?? []) {
      const call = (toolCalls[piece.index] ??= { id: '', name: '', arguments: '' });
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.name = piece.function.name;
      if (piece.function?.arguments) call.arguments += piece.function.arguments;
    }
  };
  const parser = new SseParser();
  const decoder = new TextDecoder();
  for await (const bytes of response.body) {
    for (const message of parser.push(decoder.decode(bytes as Uint8Array, { stream: true }))) take(message);
  }
  for (const message of parser.end()) take(message);
  return { content, toolCalls };
}
