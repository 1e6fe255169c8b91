/**
 * What the executor tests read off a request the scripted model received: which scenario it belongs to
 * (the user's message), how far the loop is (tool results so far) and which tools it was offered.
 */
import type { ChatCompletionRequest } from '@agentmesh/testkit';

/** The user's message; the tests name each scenario by it. Tolerates a body that is not a chat request. */
export const userText = (request: { body: unknown }): string =>
  String(
    (request.body as Partial<ChatCompletionRequest['body']> | undefined)?.messages?.find(
      (m) => m.role === 'user',
    )?.content ?? '',
  );

export const toolResultsSoFar = (request: ChatCompletionRequest): number =>
  request.body.messages.filter((m) => m.role === 'tool').length;

export const offeredTools = (request: ChatCompletionRequest): string[] =>
  ((request.body.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name);
