import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OutboundDeniedError, OutboundGuard } from '@agentmesh/runtime/outbound-guard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCompletionSummariser } from './thread-history.js';

let server: Server;
let baseUrl: string;
const received: { url: string | undefined; authorization: string | undefined; body: string }[] = [];

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  server = createServer((request, response) => {
    void bodyOf(request).then((body) => {
      received.push({ url: request.url, authorization: request.headers.authorization, body });
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: ' SUMMARY ' } }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const history = [
  { role: 'user' as const, content: 'hello' },
  { role: 'assistant' as const, content: 'hi' },
];

describe("the thread summariser's model call", () => {
  it('when the endpoint is on an allowed host, the summary is asked with the model key and its trimmed text returned', async () => {
    const summarise = chatCompletionSummariser(new OutboundGuard({ allowHosts: ['127.0.0.1'] }));
    const before = received.length;
    expect(await summarise(history, { base_url: baseUrl, model_name: 'm', api_key: 'sk-1' }, 100)).toBe(
      'SUMMARY',
    );
    const call = received.at(-1)!;
    expect(received.length).toBe(before + 1);
    expect(call.url).toBe('/v1/chat/completions');
    expect(call.authorization).toBe('Bearer sk-1');
    expect(JSON.parse(call.body)).toMatchObject({ model: 'm', max_tokens: 100 });
  });

  it('when the endpoint is loopback and not allowed, the call is refused and nothing (no key) is sent', async () => {
    const summarise = chatCompletionSummariser(new OutboundGuard());
    const before = received.length;
    await expect(
      summarise(history, { base_url: baseUrl, model_name: 'm', api_key: 'sk-canary' }, 100),
    ).rejects.toBeInstanceOf(OutboundDeniedError);
    expect(received.length).toBe(before);
  });

  it('when a host name resolves to a private address, the call is refused inside the lookup and nothing is sent', async () => {
    const guard = new OutboundGuard({ resolveHost: async () => [{ address: '127.0.0.1', family: 4 }] });
    const summarise = chatCompletionSummariser(guard);
    const before = received.length;
    const port = new URL(baseUrl).port;
    await expect(
      summarise(history, { base_url: `http://models.example.test:${port}/v1`, model_name: 'm' }, 100),
    ).rejects.toThrow();
    expect(received.length).toBe(before);
  });
});
