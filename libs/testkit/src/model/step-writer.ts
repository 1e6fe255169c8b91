/**
 * Plays one script step onto an HTTP response: latency, then the reply (SSE stream or one JSON
 * body) or the fault. Stops writing as soon as the client goes away (`signal`).
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  completionOf,
  contentChunks,
  finishingChunks,
  resolveToolCalls,
  usageOf,
  type ChatCompletionChunk,
  type CompletionIdentity,
} from './chat-chunks.js';
import {
  isFault,
  isRaw,
  type RawReply,
  type ChatRequestBody,
  type ModelFaultStep,
  type ModelReply,
  type ModelStep,
} from './model-script.js';

export interface StepContext {
  request: ChatRequestBody;
  identity: CompletionIdentity;
  nextToolCallId: () => string;
  /** Aborted when the client closes the connection or the server stops. */
  signal: AbortSignal;
}

export async function writeStep(res: ServerResponse, step: ModelStep, context: StepContext): Promise<void> {
  if (step.latencyMs && !(await pause(step.latencyMs, context.signal))) return;
  if (isFault(step)) return writeFault(res, step, context);
  if (isRaw(step)) return writeRaw(res, step.raw, context.signal);
  return context.request.stream === true ? streamReply(res, step, context) : sendReply(res, step, context);
}

async function streamReply(res: ServerResponse, reply: ModelReply, context: StepContext): Promise<void> {
  const toolCalls = resolveToolCalls(reply, context.nextToolCallId);
  const usage = usageOf(reply, context.request, toolCalls);
  const chunks = [
    ...contentChunks(reply, context.identity, toolCalls),
    ...finishingChunks(reply, context.identity, usage),
  ];
  openEventStream(res);
  if (!(await writeChunks(res, chunks, reply.chunkDelayMs ?? 0, context.signal, reply.hold))) return;
  res.end('data: [DONE]\n\n');
}

function sendReply(res: ServerResponse, reply: ModelReply, context: StepContext): void {
  const toolCalls = resolveToolCalls(reply, context.nextToolCallId);
  const usage = usageOf(reply, context.request, toolCalls);
  sendJson(res, 200, completionOf(reply, context.identity, toolCalls, usage));
}

async function writeFault(res: ServerResponse, fault: ModelFaultStep, context: StepContext): Promise<void> {
  switch (fault.fault) {
    case 'rate_limit': {
      const retryAfter = fault.retryAfterSeconds ?? 1;
      res.setHeader('retry-after', String(retryAfter));
      sendJson(
        res,
        429,
        errorBody(
          fault.message ?? 'Rate limit reached (scripted)',
          'rate_limit_exceeded',
          'rate_limit_exceeded',
        ),
      );
      return;
    }
    case 'server_error':
      sendJson(
        res,
        fault.status ?? 500,
        errorBody(fault.message ?? 'Internal server error (scripted)', 'server_error', 'server_error'),
      );
      return;
    case 'drop_connection':
      if (fault.partial && context.request.stream === true) {
        const toolCalls = resolveToolCalls(fault.partial, context.nextToolCallId);
        const chunks = contentChunks(fault.partial, context.identity, toolCalls);
        openEventStream(res);
        const sent = chunks.slice(0, fault.afterChunks ?? chunks.length);
        if (!(await writeChunks(res, sent, fault.partial.chunkDelayMs ?? 0, context.signal))) return;
        // Let the chunks reach the client before the connection dies under them.
        await new Promise<void>((resolve) => res.write('', () => resolve()));
      }
      res.socket?.destroy();
      return;
    case 'malformed_json':
      if (context.request.stream === true) {
        openEventStream(res);
        const [first] = contentChunks({}, context.identity, []);
        res.write(`data: ${JSON.stringify(first)}\n\n`);
        res.end(
          `data: {"id":"${context.identity.id}","object":"chat.completion.chunk","choices":[{"delta":\n\n`,
        );
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"id":"${context.identity.id}","object":"chat.completion","choices":[{"message":`);
      }
      return;
    case 'hang':
      await untilAborted(context.signal);
      return;
  }
}

async function writeRaw(res: ServerResponse, raw: RawReply['raw'], signal: AbortSignal): Promise<void> {
  res.writeHead(raw.status ?? 200, raw.headers ?? { 'content-type': 'text/event-stream' });
  res.flushHeaders();
  const pieces = typeof raw.body === 'string' || raw.body instanceof Uint8Array ? [raw.body] : raw.body;
  for (const piece of pieces) {
    if (signal.aborted) return;
    await new Promise<void>((resolve) => res.write(piece, () => resolve()));
  }
  res.end();
}

function openEventStream(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
}

/** Writes SSE chunks with a pause between them; false when the client left midway. */
async function writeChunks(
  res: ServerResponse,
  chunks: readonly ChatCompletionChunk[],
  delayMs: number,
  signal: AbortSignal,
  hold?: ModelReply['hold'],
): Promise<boolean> {
  for (const [i, chunk] of chunks.entries()) {
    if (signal.aborted) return false;
    if (i > 0 && delayMs > 0 && !(await pause(delayMs, signal))) return false;
    if (hold !== undefined && i === hold.afterChunks) await hold.until;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  return !signal.aborted;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The error body OpenAI-compatible servers send. */
export function errorBody(
  message: string,
  type: string,
  code: string | null,
): { error: Record<string, unknown> } {
  return { error: { message, type, param: null, code } };
}

/** Sleeps unless aborted; false when aborted. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
