/**
 * Token counts for a model call whose server sent no usage: about four characters a token, of the
 * request body as sent and of the answer (text, reasoning, tool names and arguments). Rough, but never
 * zero, so token budgets and the account's daily caps keep counting for such a provider.
 */
import type { TokenUsage } from '@agentmesh/protocol';
import type { AssistantReply } from './chat-types.js';

const CHARS_PER_TOKEN = 4;

export function estimateUsage(requestChars: number, answer: AssistantReply): TokenUsage {
  let answerChars = (answer.content?.length ?? 0) + (answer.reasoning_content?.length ?? 0);
  for (const call of answer.tool_calls ?? []) {
    answerChars += call.function.name.length + call.function.arguments.length;
  }
  const prompt = Math.ceil(requestChars / CHARS_PER_TOKEN);
  const completion = Math.ceil(answerChars / CHARS_PER_TOKEN);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
