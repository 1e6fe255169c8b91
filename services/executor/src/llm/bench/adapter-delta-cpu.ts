/**
 * CPU per streamed delta of each model adapter: the OpenAI-compatible fast path and the native adapters
 * (Anthropic Messages, OpenAI Responses, Gemini, Bedrock Converse), each reading the same number of text deltas, in its
 * API's recorded event shapes, from a model server in a child process (so serving costs this process
 * nothing). Measures this process's CPU (user + system) over the calls, after a warm-up; a measurement
 * script, not a test:
 *
 *   node --import tsx services/executor/src/llm/bench/adapter-delta-cpu.ts [deltas=2000] [calls=20]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { AnthropicMessagesModel } from '../anthropic-messages/anthropic-messages-model.js';
import { BedrockConverseModel } from '../bedrock-converse/bedrock-converse-model.js';
import type { ChatRequest, ChatResult, CompleteOptions } from '../chat-types.js';
import { GeminiModel } from '../gemini/gemini-model.js';
import { ModelEndpointGuard } from '../model-endpoint-guard.js';
import { OpenAiChatClient } from '../openai-chat-client.js';
import { OpenAiResponsesModel } from '../openai-responses/openai-responses-model.js';

const PIECE = 'abc ';

/** Bedrock's binary framing (`application/vnd.amazon.eventstream`) of Converse events `{"<type>": {...}}`. */
function eventStream(events: Record<string, unknown>[]): Buffer {
  const codec = new EventStreamCodec(
    (bytes) => Buffer.from(bytes).toString('utf8'),
    (text) => Buffer.from(text, 'utf8'),
  );
  const frames = events.map((event) => {
    const [type, body] = Object.entries(event)[0] ?? ['', {}];
    return codec.encode({
      headers: {
        ':event-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
        ':message-type': { type: 'string', value: 'event' },
      },
      body: Buffer.from(JSON.stringify(body), 'utf8'),
    });
  });
  return Buffer.concat(frames);
}

/** Bodies of one answer of `deltas` text deltas, per API, in the shapes of the recorded streams. */
function bodies(deltas: number): Record<string, string | Buffer> {
  const sse = (events: unknown[], named: boolean) =>
    events
      .map((e) => `${named ? `event: ${(e as { type: string }).type}\n` : ''}data: ${JSON.stringify(e)}\n\n`)
      .join('');
  const n = Array.from({ length: deltas }, () => PIECE);
  const chatChunk = (delta: object, finish: string | null = null) => ({
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_760_000_000,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chat =
    sse(
      [
        chatChunk({ role: 'assistant', content: '' }),
        ...n.map((text) => chatChunk({ content: text })),
        chatChunk({}, 'stop'),
        {
          ...chatChunk({}),
          choices: [],
          usage: { prompt_tokens: 10, completion_tokens: deltas, total_tokens: 10 + deltas },
        },
      ],
      false,
    ) + 'data: [DONE]\n\n';
  const anthropic = sse(
    [
      {
        type: 'message_start',
        message: {
          model: 'claude-sonnet-4-5-20250929',
          id: 'msg_bench',
          type: 'message',
          role: 'assistant',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: 12,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 1,
          },
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      ...n.map((text) => ({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: deltas },
      },
      { type: 'message_stop' },
    ],
    true,
  );
  const response = {
    id: 'resp_bench',
    object: 'response',
    created_at: 1_765_552_663,
    model: 'gpt-5.1',
    output: [],
    status: 'in_progress',
    usage: null,
  };
  const item = {
    id: 'msg_bench',
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', annotations: [], text: n.join('') }],
  };
  const responses = sse(
    [
      { type: 'response.created', sequence_number: 0, response },
      ...n.map((delta, i) => ({
        type: 'response.output_text.delta',
        sequence_number: i + 1,
        item_id: 'msg_bench',
        output_index: 0,
        content_index: 0,
        delta,
        logprobs: [],
      })),
      { type: 'response.output_item.done', output_index: 0, item },
      {
        type: 'response.completed',
        response: {
          ...response,
          status: 'completed',
          output: [item],
          usage: {
            input_tokens: 10,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: deltas,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 10 + deltas,
          },
        },
      },
    ],
    true,
  );
  const usageMetadata = { promptTokenCount: 9, candidatesTokenCount: deltas, totalTokenCount: 9 + deltas };
  const gemini = sse(
    n.map((text, i) => ({
      candidates: [
        {
          content: { parts: [{ text }], role: 'model' },
          index: 0,
          ...(i === deltas - 1 ? { finishReason: 'STOP' } : {}),
        },
      ],
      usageMetadata,
      modelVersion: 'gemini-2.5-flash',
      responseId: 'bench',
    })),
    false,
  );
  const bedrock = eventStream([
    { messageStart: { role: 'assistant' } },
    ...n.map((text) => ({ contentBlockDelta: { contentBlockIndex: 0, delta: { text } } })),
    { contentBlockStop: { contentBlockIndex: 0 } },
    { messageStop: { stopReason: 'end_turn' } },
    {
      metadata: {
        metrics: { latencyMs: 2040 },
        usage: { inputTokens: 22, outputTokens: deltas, totalTokens: 22 + deltas },
      },
    },
  ]);
  return { chat, anthropic, responses, gemini, bedrock };
}

/** The child: answers every POST with the body its path names. */
function serve(): void {
  const deltas = Number(process.env['BENCH_DELTAS']);
  const body = bodies(deltas);
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const url = req.url ?? '';
      const key = url.includes('/chat/completions')
        ? 'chat'
        : url.includes('/messages')
          ? 'anthropic'
          : url.includes('/responses')
            ? 'responses'
            : url.includes('/converse-stream')
              ? 'bedrock'
              : 'gemini';
      res.writeHead(200, {
        'content-type': key === 'bedrock' ? 'application/vnd.amazon.eventstream' : 'text/event-stream',
      });
      res.end(body[key]);
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send?.(typeof address === 'object' && address ? address.port : 0);
  });
}

interface Adapter {
  complete(request: ChatRequest, options?: CompleteOptions): Promise<ChatResult>;
}

async function measure(name: string, adapter: Adapter, deltas: number, calls: number): Promise<void> {
  const ask: ChatRequest = { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'count' }] };
  let seen = 0;
  const options: CompleteOptions = { onContentDelta: () => void (seen += 1) };
  for (let i = 0; i < 3; i++) await adapter.complete(ask, options);
  seen = 0;
  const start = process.cpuUsage();
  const wall = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await adapter.complete(ask, options);
  const cpu = process.cpuUsage(start);
  const wallMs = Number(process.hrtime.bigint() - wall) / 1e6;
  const cpuUs = cpu.user + cpu.system;
  if (seen !== deltas * calls)
    throw new Error(`${name}: ${seen} deltas handed on, expected ${deltas * calls}`);
  console.log(
    `${name.padEnd(20)} ${(cpuUs / seen).toFixed(2).padStart(7)} µs CPU/delta  ${(cpuUs / 1000 / calls).toFixed(1).padStart(7)} ms CPU/call  (${wallMs.toFixed(0)} ms wall, ${seen} deltas)`,
  );
}

async function main(): Promise<void> {
  const deltas = Number(process.argv[2] ?? 2000);
  const calls = Number(process.argv[3] ?? 20);
  const child = fork(new URL(import.meta.url), ['--serve'], {
    env: { ...process.env, BENCH_DELTAS: String(deltas) },
    execArgv: ['--import', 'tsx'],
  });
  const [port] = (await once(child, 'message')) as [number];
  const base = `http://127.0.0.1:${port}`;
  const guard = new ModelEndpointGuard({ allowHosts: ['127.0.0.1'] });
  const common = { apiKey: 'bench-key', endpointGuard: guard, maxRetries: 0 };
  try {
    console.log(`${deltas} text deltas a call, ${calls} calls each (after 3 warm-up calls)`);
    await measure(
      'openai-chat (fast)',
      new OpenAiChatClient({ ...common, baseUrl: `${base}/v1` }),
      deltas,
      calls,
    );
    await measure(
      'anthropic-messages',
      new AnthropicMessagesModel({ ...common, baseUrl: base }),
      deltas,
      calls,
    );
    await measure(
      'openai-responses',
      new OpenAiResponsesModel({ ...common, baseUrl: `${base}/v1` }),
      deltas,
      calls,
    );
    await measure('gemini', new GeminiModel({ ...common, baseUrl: base }), deltas, calls);
    await measure(
      'bedrock-converse',
      new BedrockConverseModel({
        ...common,
        apiKey: JSON.stringify({ access_key_id: 'AKIABENCH', secret_access_key: 'bench-secret' }),
        baseUrl: base,
      }),
      deltas,
      calls,
    );
  } finally {
    child.kill();
    await guard.close();
  }
}

if (process.argv.includes('--serve')) serve();
else await main();
