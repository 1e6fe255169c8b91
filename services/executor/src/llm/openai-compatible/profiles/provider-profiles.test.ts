// Each provider profile's request, as a real loopback model server receives it from the real client, for
// the rules that differ between profiles; and the answers every profile reads (content part arrays, no
// usage), replayed in the providers' recorded shapes.
import type { ChatMessage } from '@agentmesh/protocol';
import { startScriptedModel, type RecordedModelRequest, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MISTRAL_ANSWER,
  MISTRAL_THINKING,
  mistralReasoningCompletion,
  mistralReasoningStream,
  streamWithoutUsage,
} from '../../../__fixtures__/provider-streams.js';
import { OpenAiChatClient, PROVIDER_PROFILES, profileOf, type ChatRequest } from '../../index.js';

const KEY = 'sk-canary-profile-77a1';

let model: ScriptedModel;

beforeAll(async () => {
  model = await startScriptedModel({ respond: () => ({ content: 'ok' }) });
});

afterAll(async () => {
  await model?.stop();
});

const toolCall = { id: 'call_1', type: 'function' as const, function: { name: 'search', arguments: '{}' } };

/** A conversation after a tool-calling turn with reasoning, and a plain earlier turn with reasoning. */
const conversation: ChatMessage[] = [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: 'Hello.', reasoning_content: 'greet back' },
  { role: 'user', content: 'search' },
  { role: 'assistant', content: null, tool_calls: [toolCall], reasoning_content: 'I should search.' },
  { role: 'tool', tool_call_id: 'call_1', content: '{"hits":1}' },
  // A tool-calling turn whose model produced no reasoning.
  { role: 'assistant', content: null, tool_calls: [{ ...toolCall, id: 'call_2' }] },
  { role: 'tool', tool_call_id: 'call_2', content: '{"hits":2}' },
];

const ask: ChatRequest = { model: 'm', messages: conversation, max_tokens: 64 };

async function sent(provider: string, baseUrl = model.baseUrl): Promise<RecordedModelRequest> {
  const profile = profileOf(provider);
  if (profile === undefined) throw new Error(`no profile ${provider}`);
  const before = model.requests.length;
  await new OpenAiChatClient({ baseUrl, apiKey: KEY, profile, maxRetries: 0 }).complete(ask);
  const request = model.requests[before];
  if (request === undefined) throw new Error('the model got no request');
  return request;
}

const bodyOf = (request: RecordedModelRequest) => request.body as Record<string, unknown>;
const assistants = (request: RecordedModelRequest) =>
  (bodyOf(request)['messages'] as Record<string, unknown>[]).filter((m) => m['role'] === 'assistant');

describe('provider profiles: the request each one sends', () => {
  it('when the provider is generic, the key is a Bearer token, usage is asked for, max_tokens is sent and no reasoning goes back', async () => {
    const request = await sent('generic');
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(request.headers['api-key']).toBeUndefined();
    expect(bodyOf(request)).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 64,
    });
    expect(assistants(request).every((m) => !('reasoning_content' in m))).toBe(true);
  });

  it('when the provider is openai, max_tokens goes as max_completion_tokens (the o-series refuse max_tokens)', async () => {
    const body = bodyOf(await sent('openai'));
    expect(body['max_completion_tokens']).toBe(64);
    expect(body).not.toHaveProperty('max_tokens');
  });

  it('when the provider is azure-openai, the key goes in api-key, never as a Bearer token, and a deployment URL gets an api-version', async () => {
    const origin = model.baseUrl.replace(/\/v1$/, '');
    const request = await sent('azure-openai', `${origin}/openai/deployments/gpt-4o`);
    expect(request.path).toBe('/openai/deployments/gpt-4o/chat/completions');
    expect(request.query).toEqual({ 'api-version': PROVIDER_PROFILES['azure-openai'].defaultApiVersion });
    expect(request.headers['api-key']).toBe(KEY);
    expect(request.headers['authorization']).toBeUndefined();
    expect(bodyOf(request)['max_completion_tokens']).toBe(64);
  });

  it('when an Azure base URL names its api-version, that one is kept; the versionless /openai/v1 API gets none', async () => {
    const origin = model.baseUrl.replace(/\/v1$/, '');
    const pinned = await sent(
      'azure-openai',
      `${origin}/openai/deployments/gpt-4o?api-version=2025-04-01-preview`,
    );
    expect(pinned.query).toEqual({ 'api-version': '2025-04-01-preview' });
    const v1 = await sent('azure-openai', `${origin}/openai/v1`);
    expect(v1.path).toBe('/openai/v1/chat/completions');
    expect(v1.query).toEqual({});
  });

  it('when the provider is deepseek, every assistant turn with tool calls carries its reasoning_content (empty when it had none), and other turns none', async () => {
    const turns = assistants(await sent('deepseek'));
    expect(turns.map((m) => m['reasoning_content'])).toEqual([undefined, 'I should search.', '']);
  });

  it('when the provider is deepseek-r1, no assistant turn carries reasoning_content (deepseek-reasoner answers 400 to it)', async () => {
    const turns = assistants(await sent('deepseek-r1'));
    expect(turns.every((m) => !('reasoning_content' in m))).toBe(true);
    expect(turns).toHaveLength(3);
  });

  it('when the provider is mistral, no stream_options is sent (Mistral refuses unknown fields with 422) and no reasoning goes back', async () => {
    const request = await sent('mistral');
    expect(bodyOf(request)).not.toHaveProperty('stream_options');
    expect(assistants(request).every((m) => !('reasoning_content' in m))).toBe(true);
  });

  it('every provider the protocol names has a profile, and one it does not name has none', () => {
    for (const provider of Object.keys(PROVIDER_PROFILES)) expect(profileOf(provider)).toBeDefined();
    expect(profileOf('anthropic')).toBeUndefined();
  });
});

describe('provider answers every profile reads', () => {
  const client = () =>
    new OpenAiChatClient({ baseUrl: model.baseUrl, profile: PROVIDER_PROFILES.generic, maxRetries: 0 });
  const question: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'What is 2+2?' }] };

  it('when Mistral streams content as thinking and text parts, the text is the answer and the thinking the reasoning, each handed on as it arrives', async () => {
    model.enqueue(mistralReasoningStream());
    const content: string[] = [];
    const reasoning: string[] = [];
    const result = await client().complete(question, {
      onContentDelta: (delta) => content.push(delta),
      onReasoningDelta: (delta) => reasoning.push(delta),
    });
    expect(result.message).toEqual({
      role: 'assistant',
      content: MISTRAL_ANSWER,
      reasoning_content: MISTRAL_THINKING,
    });
    expect(content).toEqual(['The answer ', 'is 4.']);
    expect(reasoning).toEqual(['The user asks for 2+2. ', 'That is 4.']);
    expect(result).toMatchObject({ finishReason: 'stop', usage: { total_tokens: 31 } });
    expect(result.usageReported).toBeUndefined();
  });

  it('when Mistral answers unstreamed with a content part array, the text part is the answer and the thinking part the reasoning', async () => {
    model.enqueue(mistralReasoningCompletion());
    const result = await client().complete(question);
    expect(result.message).toEqual({
      role: 'assistant',
      content: MISTRAL_ANSWER,
      reasoning_content: MISTRAL_THINKING,
    });
  });

  it('when the server sends no usage, the result says so and counts about four characters a token of the request and the answer', async () => {
    model.enqueue(streamWithoutUsage('twelve chars'));
    const before = model.requests.length;
    const result = await client().complete(question);
    const requestChars = JSON.stringify(model.requests[before]?.body).length;
    expect(result.usageReported).toBe(false);
    expect(result.usage).toEqual({
      prompt_tokens: Math.ceil(requestChars / 4),
      completion_tokens: 3,
      total_tokens: Math.ceil(requestChars / 4) + 3,
    });
  });
});
