/**
 * Answers in the shapes providers send them, for replay through the test kit's scripted model as raw
 * bodies. Shapes follow the providers' documentation: Mistral's reasoning models (Magistral) send
 * `content` as an array of parts, `{type: "thinking", thinking: [{type: "text", text}]}` and
 * `{type: "text", text}` (docs.mistral.ai, reasoning; its API's ThinkChunk/TextChunk), with usage on the
 * chunk that carries the finish reason and no `stream_options`; DeepSeek's thinking mode streams
 * `reasoning_content` beside `content` (api-docs.deepseek.com, thinking mode).
 */
import { sseBody, type RawReply } from '@agentmesh/testkit';

const base = { id: 'cmpl-3f1b', object: 'chat.completion.chunk', created: 1_760_000_000 };

function chunk(model: string, delta: Record<string, unknown>, finish: string | null = null, extra = {}) {
  return { ...base, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra };
}

const thinking = (text: string) => ({ type: 'thinking', thinking: [{ type: 'text', text }] });
const text = (value: string) => ({ type: 'text', text: value });

export const MISTRAL_THINKING = 'The user asks for 2+2. That is 4.';
export const MISTRAL_ANSWER = 'The answer is 4.';

/** A streamed Magistral answer: thinking parts, then text as parts and as a plain string. */
export function mistralReasoningStream(): RawReply {
  const model = 'magistral-medium-2509';
  return {
    raw: {
      body: sseBody([
        chunk(model, { role: 'assistant', content: '' }),
        chunk(model, { content: [thinking('The user asks for 2+2. ')] }),
        chunk(model, { content: [thinking('That is 4.')] }),
        chunk(model, { content: [text('The answer ')] }),
        chunk(model, { content: 'is 4.' }),
        chunk(model, { content: '' }, 'stop', {
          usage: { prompt_tokens: 11, total_tokens: 31, completion_tokens: 20 },
        }),
      ]),
    },
  };
}

/** The same answer, not streamed: one `chat.completion` whose message content is the part array. */
export function mistralReasoningCompletion(): RawReply {
  return {
    raw: {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'cmpl-3f1c',
        object: 'chat.completion',
        created: 1_760_000_000,
        model: 'magistral-medium-2509',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: [thinking(MISTRAL_THINKING), text(MISTRAL_ANSWER)],
              tool_calls: null,
            },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 11, total_tokens: 31, completion_tokens: 20 },
      }),
    },
  };
}

/** A streamed answer with no usage anywhere (as a proxy in front of another API sent it). */
export function streamWithoutUsage(content: string, finish = 'stop'): RawReply {
  const model = 'claude-via-proxy';
  return {
    raw: {
      body: sseBody([
        chunk(model, { role: 'assistant', content: '' }),
        chunk(model, { content }),
        chunk(model, {}, finish),
      ]),
    },
  };
}
