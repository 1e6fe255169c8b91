// The model client behind the model endpoint guard, against real servers on loopback: a denied endpoint gets
// no request at all (so the key in the Authorization header never leaves), an allow-listed one works as before,
// and a redirect is not followed. Every target is loopback, so a broken guard still sends nothing further:
// private ranges, metadata addresses and DNS answers are the shared OutboundGuard's tests.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { once } from 'node:events';
import { startRecordingApi, startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  LlmEndpointDeniedError,
  LlmResponseError,
  ModelEndpointGuard,
  OpenAiChatClient,
  type ChatRequest,
  type ModelEndpointGuardOptions,
} from './index.js';

const MODEL_KEY = 'sk-canary-model-key-9a4e71';
const ask: ChatRequest = { model: 'gpt-scripted', messages: [{ role: 'user', content: 'hello' }] };

let model: ScriptedModel;
const guards: ModelEndpointGuard[] = [];

beforeAll(async () => {
  model = await startScriptedModel({ apiKey: MODEL_KEY });
});
afterEach(async () => {
  await Promise.all(guards.splice(0).map((guard) => guard.close()));
});
afterAll(async () => {
  await model?.stop();
});

function guardedClient(baseUrl: string, guard: ModelEndpointGuardOptions = {}): OpenAiChatClient {
  const endpointGuard = new ModelEndpointGuard(guard);
  guards.push(endpointGuard);
  return new OpenAiChatClient({
    baseUrl,
    apiKey: MODEL_KEY,
    endpointGuard,
    maxRetries: 2,
    backoff: { initialMs: 1, maxMs: 1 },
  });
}

async function deniedCall(client: OpenAiChatClient): Promise<LlmEndpointDeniedError> {
  const error = await client.complete(ask).then(
    () => expect.unreachable('the model call went through'),
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(LlmEndpointDeniedError);
  return error as LlmEndpointDeniedError;
}

/** A plain HTTP server on [::1] that records the requests it gets. */
async function startIpv6Recorder(): Promise<{ server: Server; url: string; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((request, response) => {
    requests.push(request);
    response.writeHead(500).end();
  });
  server.listen({ host: '::1', port: 0 });
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address !== 'object') throw new Error('no address');
  return { server, url: `http://[::1]:${address.port}/v1`, requests };
}

describe('model endpoint guard', () => {
  it('when the base URL is 127.0.0.1 and not allow-listed, the call fails FORBIDDEN at once and the model gets no request', async () => {
    const before = model.requests.length;

    const error = await deniedCall(guardedClient(model.baseUrl));

    expect(error).toMatchObject({ code: 'FORBIDDEN', retryable: false, detail: { attempts: 0 } });
    expect(error.message).toMatch(/^model endpoint http:\/\/127\.0\.0\.1:\d+ denied: loopback address/);
    expect(error.message).toContain('MODEL_ALLOW_HOSTS');
    expect(model.requests.length).toBe(before);
  });

  it('when the base URL is [::1] and not allow-listed, the call fails FORBIDDEN and the server there gets nothing', async () => {
    const recorder = await startIpv6Recorder();
    try {
      const error = await deniedCall(guardedClient(recorder.url, { allowHosts: ['127.0.0.1'] }));

      expect(error.code).toBe('FORBIDDEN');
      expect(recorder.requests).toHaveLength(0);
    } finally {
      recorder.server.close();
    }
  });

  it('when the base URL names a host that resolves to loopback (localhost), the connection is refused at DNS time', async () => {
    const before = model.requests.length;
    const { port } = new URL(model.baseUrl);

    const error = await deniedCall(guardedClient(`http://localhost:${port}/v1`));

    expect(error.code).toBe('FORBIDDEN');
    expect(error.message).toMatch(
      /^model endpoint localhost denied: loopback address \(localhost resolves to/,
    );
    expect(model.requests.length).toBe(before);
  });

  it('when 127.0.0.1 is allow-listed, the call reaches the model with the key and the answer comes back', async () => {
    model.enqueue({ content: 'hi there' });

    const result = await guardedClient(model.baseUrl, { allowHosts: ['127.0.0.1'] }).complete(ask);

    expect(result.message.content).toBe('hi there');
    expect(model.requests.at(-1)?.headers.authorization).toBe(`Bearer ${MODEL_KEY}`);
  });

  it('when the allow-listed endpoint redirects elsewhere, the redirect is not followed and the call fails LLM_ERROR', async () => {
    const elsewhere = await startRecordingApi();
    const endpoint = await startRecordingApi({
      routes: [
        {
          method: 'POST',
          path: '/v1/chat/completions',
          reply: { status: 307, headers: { location: `${elsewhere.url}/v1/chat/completions` } },
        },
      ],
    });
    try {
      const error = await guardedClient(`${endpoint.url}/v1`, { allowHosts: ['127.0.0.1'] })
        .complete(ask)
        .then(
          () => expect.unreachable('the redirect was followed to an answer'),
          (failure: unknown) => failure,
        );

      expect(error).toBeInstanceOf(LlmResponseError);
      expect((error as LlmResponseError).detail.reason).toContain('redirects are not followed');
      expect(endpoint.requests).toHaveLength(1);
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await Promise.all([endpoint.stop(), elsewhere.stop()]);
    }
  });
});
