/**
 * Recorded streams of the providers' native APIs (one JSON event a line, files beside this one; README.md
 * says where each was recorded), replayed through the test kit's scripted model as raw SSE bodies, and the
 * providers' documented error bodies.
 */
import { readFileSync } from 'node:fs';
import { EventStreamCodec } from '@smithy/eventstream-codec';
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

const eventStream = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

/** One `application/vnd.amazon.eventstream` frame of a Converse stream event (`{"<eventType>": {...}}`). */
export function bedrockFrame(event: Record<string, unknown>): Uint8Array {
  const [type, body] = Object.entries(event)[0] ?? [];
  if (type === undefined) throw new Error('an empty Converse event');
  return eventStream.encode({
    headers: {
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: Buffer.from(JSON.stringify(body), 'utf8'),
  });
}

/** Converse stream events as Bedrock sends them: one binary frame each, each frame its own write. */
export function bedrockStream(
  events: readonly Record<string, unknown>[],
  extra: Uint8Array[] = [],
): RawReply {
  return {
    raw: {
      headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'b7c1-recorded' },
      body: [...events.map(bedrockFrame), ...extra],
    },
  };
}

/** A recorded Converse stream (one JSON event a line), replayed in its binary framing. */
export function recordedBedrockStream(file: string): RawReply {
  return bedrockStream(recordedEvents(file));
}

/** The recorded `modelStreamErrorException` frame (README.md), as Bedrock sent it. */
export function bedrockModelStreamErrorFrame(): Uint8Array {
  const text = readFileSync(
    new URL('bedrock-model-stream-error.eventstream.base64.txt', import.meta.url),
    'utf8',
  );
  return Buffer.from(text.trim(), 'base64');
}

/**
 * docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html (Errors) and the AWS
 * JSON protocol: an HTTP error names its type in `x-amzn-errortype` and its message in the body.
 */
export function bedrockError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): RawReply {
  return {
    raw: {
      status,
      headers: {
        'content-type': 'application/json',
        'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
        'x-amzn-requestid': 'b7c1-error',
        ...headers,
      },
      body: JSON.stringify({ message }),
    },
  };
}

/** A recorded non-streamed answer (`*-whole.json` beside this file): one JSON body, status 200. */
export function recordedWhole(file: string): RawReply {
  const body = readFileSync(new URL(file, import.meta.url), 'utf8');
  return { raw: { status: 200, headers: { 'content-type': 'application/json' }, body } };
}
