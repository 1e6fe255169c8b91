/**
 * Reads a successful (2xx) answer into the accumulator: an SSE stream chunk by chunk, handing each
 * piece of text on as it arrives, or — from a server that ignored `stream: true` — one buffered
 * `chat.completion`. Connection trouble becomes a retryable attempt failure; anything unreadable a
 * final one. Errors thrown by the caller's callbacks pass through untouched.
 */
import { finished } from 'node:stream';
import type { Dispatcher } from 'undici';
import { AttemptFailure, excerpt, transportFailure } from './attempt-failure.js';
import type { AttemptDeadline } from './attempt-deadline.js';
import { SseLimitError, SseParser, type SseMessage } from '@agentmesh/sse';
import {
  MalformedChunkError,
  UpstreamReportedError,
  type ChunkDeltas,
  type StreamAccumulator,
} from './stream-accumulator.js';

type ResponseBody = Dispatcher.ResponseData['body'];

export interface AnswerReading {
  accumulator: StreamAccumulator;
  deadline: AttemptDeadline;
  /** Hands text on to the caller. */
  emit: (deltas: ChunkDeltas) => void;
  /** The caller's backpressure (see CompleteOptions), awaited between network reads. */
  backpressure?: () => Promise<void> | undefined;
  /** Removes secrets from text about to be kept in an error. */
  scrub: (text: string) => string;
}

/** A buffered answer larger than this is not a chat completion. */
const MAX_BUFFERED_BYTES = 32 * 1024 * 1024;

/** What may still follow `[DONE]` before the connection is closed instead of read to its end. */
const DRAIN_AFTER_DONE_BYTES = 64 * 1024;

/** `TextDecoder.decode` options for a chunk of a stream: one object, not one per chunk. */
const STREAMING = { stream: true } as const;

/**
 * Reads an SSE answer up to `[DONE]` (or a clean end after the finish reason). Each network chunk is taken
 * as the body emits it ('data'), not through the stream's async iterator: at a real model's pace a chunk is
 * one delta, and the iterator's promises and ticks per chunk cost about a quarter of the CPU of reading it
 * (a loopback probe of 45,000 deltas: 11–12.5 µs per delta against 9 µs). Backpressure pauses the body.
 */
export async function readEventStream(body: ResponseBody, reading: AnswerReading): Promise<void> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  // Listened to for good, before anything else: undici's 'error' for a body destroyed or dropped before
  // its end (RequestAbortedError) may come after this reading is over, and unheard it would be an uncaught
  // exception (seen after a model call's idle timeout).
  body.on('error', () => undefined);
  let sawDone = false;
  let received = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: unknown): void => {
        if (settled) return;
        settled = true;
        body.off('data', onData);
        stopWatching();
        if (error === undefined) resolve();
        else reject(error);
      };
      /** Takes the events of a piece of text; true once `[DONE]` came. */
      const take = (events: readonly SseMessage[]): boolean => {
        for (const event of events) {
          if (takeEvent(event, reading) === 'done') {
            sawDone = true;
            return true;
          }
        }
        return false;
      };
      const onData = (chunk: Buffer): void => {
        if (settled) return;
        try {
          reading.deadline.touch();
          received += chunk.length;
          const text = decoder.decode(chunk, STREAMING);
          if (take(parseEvents(() => parser.push(text)))) return settle();
          const backedUp = reading.backpressure?.();
          if (backedUp === undefined) return;
          body.pause();
          backedUp.then(() => {
            if (settled) return;
            // Waiting on our own consumer is not the model being idle.
            reading.deadline.touch();
            body.resume();
          }, settle);
        } catch (error) {
          // The caller's callbacks' errors, and unreadable answers, end the reading as they are.
          settle(error);
        }
      };
      const onEnd = (): void => {
        if (settled) return;
        try {
          const text = decoder.decode();
          take(parseEvents(() => [...parser.push(text), ...parser.end()]));
          settle();
        } catch (error) {
          settle(error);
        }
      };
      const onError = (error: unknown): void => {
        if (settled) return;
        const failure = transportFailure(error, reading.deadline.timedOut, 'response', reading.scrub);
        // Past the finish reason only usage and `[DONE]` are still to come: a connection lost there costs
        // the usage figures, not the answer, so the stream counts as ended.
        if (failure.retryable && reading.accumulator.isFinished) onEnd();
        else settle(failure);
      };
      // The body's end, its error, or its close before the end (ERR_STREAM_PREMATURE_CLOSE), also when
      // one of them happened before this reading started. (Watched before any chunk can flow.)
      const stopWatching = finished(body, (error) => (error ? onError(error) : onEnd()));
      body.on('data', onData);
    });
  } finally {
    // After `[DONE]` the rest of the response (mostly just its end) is read and dropped in the background,
    // so the connection serves the next call; leaving it unread made an abort error (its stack trace
    // mapped through the source maps: a measurable share of an executor's CPU per model call) and could
    // close the connection. On failure, or at the stream's end, the body is destroyed as before.
    // (dump's limit counts every byte of the body, those read here included.)
    if (sawDone) void body.dump({ limit: received + DRAIN_AFTER_DONE_BYTES }).catch(() => undefined);
    else body.destroy();
  }
  if (!reading.accumulator.isFinished) {
    throw new AttemptFailure({ retryable: true, reason: 'the stream ended before the answer was complete' });
  }
}

/** Reads a whole non-streamed answer: a `chat.completion`, or SSE text sent without its content type. */
export async function readBufferedAnswer(body: ResponseBody, reading: AnswerReading): Promise<void> {
  const text = await readText(body, reading);
  if (/^\s*(data|event|:)/.test(text)) {
    const parser = new SseParser();
    const events = parseEvents(() => [...parser.push(text), ...parser.end()]);
    for (const event of events) if (takeEvent(event, reading) === 'done') return;
    return;
  }
  const completion = parseJson(text, 'the response body', reading);
  reading.emit(readable(() => reading.accumulator.applyCompletion(completion), reading));
}

/** Takes one SSE event; 'done' at the `[DONE]` sentinel. */
function takeEvent(event: SseMessage, reading: AnswerReading): 'done' | 'more' {
  if (event.data.trim() === '[DONE]') return 'done';
  if (event.event === 'error') {
    throw new AttemptFailure({
      retryable: false,
      reason: `the model server reported an error: ${excerpt(reading.scrub(reportedMessage(event.data)))}`,
    });
  }
  const chunk = parseJson(event.data, 'a stream chunk', reading);
  reading.emit(readable(() => reading.accumulator.applyChunk(chunk), reading));
  return 'more';
}

/** The message of an `event: error`, whether its data is `{error: {message}}`, `{message}` or text. */
function reportedMessage(data: string): string {
  const parsed = tryParseJson(data);
  const record = isRecord(parsed) ? parsed : {};
  const inner = isRecord(record['error']) ? record['error'] : record;
  return typeof inner['message'] === 'string' ? inner['message'] : data;
}

async function nextChunk(chunks: AsyncIterator<Buffer>, reading: AnswerReading): Promise<Buffer | undefined> {
  let next: IteratorResult<Buffer>;
  try {
    next = await chunks.next();
  } catch (error) {
    throw transportFailure(error, reading.deadline.timedOut, 'response', reading.scrub);
  }
  if (next.done) return undefined;
  reading.deadline.touch();
  return next.value;
}

async function readText(body: ResponseBody, reading: AnswerReading): Promise<string> {
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for (let chunk = await nextChunk(chunks, reading); chunk; chunk = await nextChunk(chunks, reading)) {
      size += chunk.length;
      if (size > MAX_BUFFERED_BYTES) {
        throw new AttemptFailure({
          retryable: false,
          reason: `the response body is larger than ${MAX_BUFFERED_BYTES} bytes`,
        });
      }
      parts.push(chunk);
    }
  } finally {
    await chunks.return?.().catch(() => undefined);
  }
  return Buffer.concat(parts).toString('utf8');
}

function parseEvents(parse: () => SseMessage[]): SseMessage[] {
  try {
    return parse();
  } catch (error) {
    if (error instanceof SseLimitError) {
      throw new AttemptFailure({ retryable: false, reason: error.message, cause: error });
    }
    throw error;
  }
}

function parseJson(text: string, what: string, reading: AnswerReading): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AttemptFailure({
      retryable: false,
      reason: `${what} is not valid JSON`,
      body: excerpt(reading.scrub(text)),
      // JSON.parse quotes the text it choked on, so the cause is scrubbed like everything else.
      cause: error instanceof Error ? new SyntaxError(reading.scrub(error.message)) : undefined,
    });
  }
}

function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Runs an accumulator step, turning an answer it cannot read into a final attempt failure. */
function readable<T>(step: () => T, reading: AnswerReading): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof MalformedChunkError) {
      throw new AttemptFailure({
        retryable: false,
        reason: `malformed answer: ${error.message}`,
        cause: error,
      });
    }
    if (error instanceof UpstreamReportedError) {
      throw new AttemptFailure({
        retryable: false,
        reason: `the model server reported an error: ${excerpt(reading.scrub(error.message))}`,
      });
    }
    throw error;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
