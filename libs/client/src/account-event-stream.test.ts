import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chunkEvent,
  errorEvent,
  sendJson,
  sendSse,
  startStandInGateway,
  type StandInGateway,
} from './__fixtures__/stand-in-gateway.js';
import { MeshApiError, MeshUnreachableError } from './errors.js';
import { MeshClient } from './mesh-client.js';

let gateway: StandInGateway;
let client: MeshClient;

beforeEach(async () => {
  gateway = await startStandInGateway();
  client = new MeshClient({ baseUrl: gateway.url, apiKey: 'k' });
});
afterEach(async () => {
  await gateway.stop();
});

describe('MeshClient.tail', () => {
  it('yields each event by the type in its data, whatever the SSE event name, and throws MeshUnreachableError when the gateway ends the stream', async () => {
    const chunk = chunkEvent(1, 'hi');
    const failed = errorEvent(2, 'LLM_ERROR', 'refused');
    gateway.handle((_request, response) =>
      sendSse(
        response,
        `id: 1\nevent: message_chunk\ndata: ${JSON.stringify(chunk)}\n\n: ping\n\n` +
          `id: 2\nevent: task_error\ndata: ${JSON.stringify(failed)}\n\n` +
          ': too slow: events were dropped, the stream ends; reconnect\n\n',
      ),
    );

    const seen: unknown[] = [];
    const ended = await (async () => {
      for await (const event of client.tail({ account: 'acme' })) seen.push(event);
    })().catch((error: unknown) => error);

    expect(seen).toEqual([chunk, failed]);
    expect(ended).toBeInstanceOf(MeshUnreachableError);
    expect(gateway.requests[0]).toMatchObject({ method: 'GET', path: '/v1/events?account=acme' });
  });

  it("a refusal is the gateway's error as MeshApiError", async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 403, {
        code: 'FORBIDDEN',
        message: "an API key follows its own account's events only",
      }),
    );

    const tail = client.tail({ account: 'beta' })[Symbol.asyncIterator]();
    const error = await tail.next().catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MeshApiError);
    expect(error).toMatchObject({ code: 'FORBIDDEN', status: 403 });
  });
});
