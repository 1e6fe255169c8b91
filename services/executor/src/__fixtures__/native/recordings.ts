/**
 * Recorded streams of the providers' native APIs (one JSON event a line, files beside this one; README.md
 * says where each was recorded), replayed through the test kit's scripted model as raw SSE bodies, and the
 * providers' documented error bodies.
 */
import { readFileSync } from 'node:fs';
import { sseBody, type RawReply } from '@agentmesh/testkit';

/** The events of a recording, in order. */
export function recordedEvents(file: string): Record<string, unknown>[] {
  const text = readFileSync(new URL(file, import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * A recording as its API streams it: Anthropic and OpenAI Responses name each SSE event by its `type`
 * (`event: message_start`); Gemini sends bare `data:` lines. None ends with `[DONE]`.
 */
export function recordedStream(file: string, named = !file.startsWith('gemini')): RawReply {
  const events = recordedEvents(file);
  return { raw: { body: sseBody(events, { done: false, ...(named ? { eventField: 'type' } : {}) }) } };
}

/** An HTTP error answer with a JSON body. */
export function errorReply(status: number, body: unknown, headers: Record<string, string> = {}): RawReply {
  return {
    raw: { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) },
  };
}

/** docs.anthropic.com/en/api/errors: the body of every error, HTTP or in a stream. */
export const anthropicError = (type: string, message: string) => ({
  type: 'error',
  error: { type, message },
});

/**
 * docs.anthropic.com/en/docs/build-with-claude/streaming ("Error events"): an `overloaded_error` sent
 * inside a 200 stream, after `message_start`.
 */
export function anthropicOverloadedMidStream(): RawReply {
  const start = recordedEvents('anthropic-text.chunks.txt')[0];
  return {
    raw: {
      body: [
        `event: message_start\ndata: ${JSON.stringify(start)}\n\n`,
        `event: error\ndata: ${JSON.stringify(anthropicError('overloaded_error', 'Overloaded'))}\n\n`,
      ],
    },
  };
}
