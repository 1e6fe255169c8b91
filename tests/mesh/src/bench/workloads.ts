/**
 * The tasks the bench runs, as the scripted model plays them. One model serves every workload: the
 * first user message names the workload, and the model answers what that workload's conversation
 * calls for (tool calls first, the answer once tool results are in), so concurrent tasks of any mix
 * each get their own script. Every reply is streamed (the executor and the floor both ask for it).
 */
import type { ChatCompletionRequest, ModelStep } from '@agentmesh/testkit';

export const Workload = {
  /** One tool call (an HTTP GET), then an answer streamed as 8 content deltas. */
  oneTool: 'one-tool',
  /** No tool: an answer streamed as 2,000 small deltas. */
  longAnswer: 'long-answer',
  /** Ten tool calls in one turn (ten HTTP GETs), then a short answer. */
  tenTools: 'ten-tools',
} as const;
export type Workload = (typeof Workload)[keyof typeof Workload];

/** Characters per streamed delta of every answer. */
export const DELTA_CHARS = 4;
/** 32 characters: 8 deltas of 4. */
export const ONE_TOOL_ANSWER = 'Founded in 2012 by Zhang Yiming.';
export const LONG_ANSWER_DELTAS = 2_000;
export const LONG_ANSWER = 'tok '.repeat(LONG_ANSWER_DELTAS);
export const PARALLEL_TOOL_CALLS = 10;
export const TEN_TOOLS_ANSWER = 'All ten are found.';

/** The tool every workload calls: an HTTP GET on the recording API. */
export const LOOKUP_TOOL = {
  name: 'lookup',
  description: 'Looks a company up.',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
} as const;

export function userMessage(workload: Workload, i: number): string {
  return `${workload} #${i}`;
}

export function workloadOf(text: string): Workload | undefined {
  return Object.values(Workload).find((workload) => text.startsWith(`${workload} #`));
}

/** The scripted model's answer to a bench conversation; undefined (an HTTP 500) for anything else. */
export function benchReply(request: ChatCompletionRequest): ModelStep | undefined {
  const messages = request.body.messages;
  const first = messages.find((message) => message.role === 'user');
  const workload = typeof first?.content === 'string' ? workloadOf(first.content) : undefined;
  if (!workload) return undefined;
  const toolResultsIn = messages.at(-1)?.role === 'tool';
  switch (workload) {
    case Workload.oneTool:
      return toolResultsIn
        ? { content: ONE_TOOL_ANSWER, chunkSize: DELTA_CHARS }
        : { toolCalls: [{ name: LOOKUP_TOOL.name, arguments: { q: 'bytedance' } }] };
    case Workload.longAnswer:
      return { content: LONG_ANSWER, chunkSize: DELTA_CHARS };
    case Workload.tenTools:
      return toolResultsIn
        ? { content: TEN_TOOLS_ANSWER, chunkSize: DELTA_CHARS }
        : {
            toolCalls: Array.from({ length: PARALLEL_TOOL_CALLS }, (_, k) => ({
              name: LOOKUP_TOOL.name,
              arguments: { q: `company-${k}` },
            })),
          };
  }
}
