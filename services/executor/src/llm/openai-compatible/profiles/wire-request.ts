/**
 * A provider profile applied to one request: the completions URL, the headers with the key, and the JSON
 * body. Done once per model call (not per delta): the messages are copied only when some assistant
 * message's reasoning must be added or left out.
 */
import type { ChatMessage } from '@agentmesh/protocol';
import type { ChatRequest } from '../../chat-types.js';
import { ReasoningPassBack, type ProviderProfile } from './provider-profiles.js';

/** `<baseUrl>/chat/completions`; Azure keeps the base URL's query and adds its `api-version`. */
export function completionsUrl(baseUrl: string, profile: ProviderProfile): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`baseUrl is not a URL: ${baseUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`baseUrl must be http(s), got ${url.protocol}`);
  }
  const query = url.search;
  url.search = '';
  url.hash = '';
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  const completions = new URL('chat/completions', url);
  if (profile.defaultApiVersion === undefined) return completions.toString();
  completions.search = query;
  // The `/openai/v1` API is versionless; a deployment URL needs one.
  const versionless = /\/openai\/v1\/$/.test(url.pathname);
  if (!versionless && !completions.searchParams.has('api-version')) {
    completions.searchParams.set('api-version', profile.defaultApiVersion);
  }
  return completions.toString();
}

export function requestHeaders(
  profile: ProviderProfile,
  apiKey: string | undefined,
  stream = true,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream, application/json' : 'application/json',
  };
  if (apiKey) {
    if (profile.auth === 'api-key') headers['api-key'] = apiKey;
    else headers['authorization'] = `Bearer ${apiKey}`;
  }
  return headers;
}

/** `stream: false` (the model config's) asks for one whole `chat.completion`, which carries its usage. */
export function requestBody(
  chat: ChatRequest,
  profile: ProviderProfile,
  stream = true,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: chat.model,
    messages: messagesFor(chat.messages, profile.reasoningPassBack),
    stream,
  };
  if (stream && profile.streamUsage) body['stream_options'] = { include_usage: true };
  if (chat.tools && chat.tools.length > 0) {
    body['tools'] = chat.tools.map(({ function: fn }) => ({
      type: 'function',
      function: { name: fn.name, description: fn.description, parameters: fn.parameters },
    }));
  }
  if (chat.temperature !== undefined) body['temperature'] = chat.temperature;
  if (chat.max_tokens !== undefined) body[profile.maxTokensField] = chat.max_tokens;
  if (chat.tool_choice !== undefined) body['tool_choice'] = chat.tool_choice;
  if (chat.parallel_tool_calls !== undefined) body['parallel_tool_calls'] = chat.parallel_tool_calls;
  return body;
}

/** The conversation with each assistant message's reasoning as the profile's rule says. */
function messagesFor(messages: readonly ChatMessage[], rule: ReasoningPassBack): readonly ChatMessage[] {
  const needsChange = messages.some((message) =>
    message.role !== 'assistant'
      ? false
      : rule === ReasoningPassBack.NEVER
        ? 'reasoning_content' in message
        : hasToolCalls(message) !== (typeof message.reasoning_content === 'string'),
  );
  if (!needsChange) return messages;
  return messages.map((message) => {
    if (message.role !== 'assistant') return message;
    const { reasoning_content: reasoning, ...rest } = message;
    if (rule === ReasoningPassBack.TOOL_CALL_TURNS && hasToolCalls(message)) {
      return { ...rest, reasoning_content: reasoning ?? '' };
    }
    return rest;
  });
}

function hasToolCalls(message: ChatMessage & { role: 'assistant' }): boolean {
  return (message.tool_calls?.length ?? 0) > 0;
}
