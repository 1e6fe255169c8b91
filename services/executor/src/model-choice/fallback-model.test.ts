/**
 * The fallback model against real loopback model servers: a resumed task starts with the model its log
 * names; a stream that broke after text was handed on stays an error (no second model repeats the text);
 * later turns stay with the model that took over.
 */
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bedrockModelStreamErrorFrame,
  bedrockStream,
  recordedEvents,
} from '../__fixtures__/native/recordings.js';
import {
  BedrockConverseModel,
  LlmUnavailableError,
  ModelEndpointGuard,
  OpenAiChatClient,
} from '../llm/index.js';
import { FallbackModel, type ModelChoice } from './fallback-model.js';

let servers: ScriptedModel[] = [];

afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  servers = [];
});

async function choices(count: number): Promise<ModelChoice[]> {
  servers = await Promise.all(Array.from({ length: count }, () => startScriptedModel()));
  return servers.map((server, index) => ({
    name: `model-${index}`,
    client: new OpenAiChatClient({
      baseUrl: server.baseUrl,
      maxRetries: 0,
      backoff: { initialMs: 1, maxMs: 1 },
    }),
  }));
}

const request = { model: 'ignored', messages: [{ role: 'user' as const, content: 'hi' }] };

describe('the fallback model', () => {
  it('when a resumed task starts at the second model, the first is never asked', async () => {
    const model = new FallbackModel(await choices(2), { startAt: 1 });
    servers[1]!.enqueue({ content: 'from the second' });

    const result = await model.complete(request);

    expect(result.answeredBy).toEqual({ model: 'model-1', index: 1 });
    expect(servers[0]!.requests).toHaveLength(0);
    expect(servers[1]!.requests[0]?.body).toMatchObject({ model: 'model-1' });
  });

  it('when the first model fails once, later turns stay with the model that took over', async () => {
    const model = new FallbackModel(await choices(2));
    servers[0]!.enqueue({ fault: 'server_error', status: 529 });
    servers[1]!.enqueue({ content: 'one' }, { content: 'two' });

    await model.complete(request);
    const second = await model.complete(request);

    expect(second.answeredBy).toEqual({ model: 'model-1', index: 1 });
    expect(servers[0]!.requests).toHaveLength(1);
    expect(servers[1]!.requests).toHaveLength(2);
  });

  it('when the stream breaks after text was handed on, the error stands and the next model is not asked', async () => {
    const model = new FallbackModel(await choices(2));
    servers[0]!.enqueue({ fault: 'drop_connection', partial: { content: 'Half an answ' }, afterChunks: 2 });
    const deltas: string[] = [];

    await expect(
      model.complete(request, { onContentDelta: (delta) => deltas.push(delta) }),
    ).rejects.toBeInstanceOf(LlmUnavailableError);
    expect(deltas.join('')).not.toBe('');
    expect(servers[1]!.requests).toHaveLength(0);
  });

  it('when a stream breaks after tool-call argument deltas were handed on, the error stands and the next model is not asked', async () => {
    const [, second] = await choices(2);
    const bedrockServer = await startScriptedModel({ anyPath: true });
    servers.push(bedrockServer);
    const guard = new ModelEndpointGuard({ allowHosts: ['127.0.0.1'] });
    try {
      const bedrock: ModelChoice = {
        name: 'bedrock',
        client: new BedrockConverseModel({
          baseUrl: bedrockServer.baseUrl.replace(/\/v1$/, ''),
          apiKey: JSON.stringify({ access_key_id: 'AKIATEST', secret_access_key: 'secret' }),
          endpointGuard: guard,
          maxRetries: 0,
        }),
      };
      const model = new FallbackModel([bedrock, second!]);
      // The recorded two-tool turn up to its first input delta, then the recorded stream error.
      const partial = recordedEvents('bedrock-two-tool-uses.chunks.txt').slice(0, 4);
      bedrockServer.enqueue(bedrockStream(partial, [bedrockModelStreamErrorFrame()]));
      const deltas: string[] = [];

      await expect(
        model.complete(request, { onToolCallDelta: (delta) => deltas.push(delta.arguments) }),
      ).rejects.toBeInstanceOf(LlmUnavailableError);
      expect(deltas.join('')).toBe('{"value":');
      expect(servers[1]!.requests).toHaveLength(0);
    } finally {
      await guard.close();
    }
  });
});
