/**
 * Writing a task's events to an HTTP response as Server-Sent Events: `id:` = seq, `event:` = the
 * type's SSE name (the type, but `task_error` for `error`, which EventSource keeps for itself:
 * {@link sseEventName}), `data:` = the event JSON; a `: ping` comment after an idle heartbeat interval
 * (one shared timer for all streams: sse-heartbeats.ts); the response ends after the terminal event.
 * Writes respect backpressure, so a slow client holds at most one event in memory.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { sseEventName, type EventType, type TaskEvent } from '@agentmesh/protocol';
import { joinHeartbeats } from './sse-heartbeats.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // Proxies such as nginx would otherwise buffer the stream.
  'x-accel-buffering': 'no',
} as const;

export function formatSseEvent(event: TaskEvent): string {
  return formatSseFrame(event.seq, event.type, JSON.stringify(event));
}

/** The frame of an event whose JSON text (one line) is `json`. */
export function formatSseFrame(seq: number, type: EventType, json: string): string {
  return `id: ${seq}\nevent: ${sseEventName(type)}\ndata: ${json}\n\n`;
}

export const SSE_HEARTBEAT = ': ping\n\n';

export interface SseStreamOptions {
  heartbeatMs: number;
  /** Aborted when the client goes away (or the gateway stops): stop writing. */
  signal: AbortSignal;
}

/**
 * Streams `frames` (events formatted by {@link formatSseEvent}) to `response` until they end or `signal`
 * aborts; then ends the response.
 */
export async function writeSseStream(
  response: ServerResponse,
  frames: AsyncIterable<string>,
  { heartbeatMs, signal }: SseStreamOptions,
): Promise<void> {
  response.writeHead(200, SSE_HEADERS);
  response.flushHeaders();
  const heartbeat = joinHeartbeats(heartbeatMs, {
    ping: () => {
      if (!response.writableEnded) response.write(SSE_HEARTBEAT);
    },
  });
  try {
    for await (const frame of frames) {
      if (signal.aborted) break;
      heartbeat.wrote();
      if (!response.write(frame)) await once(response, 'drain', { signal });
    }
  } finally {
    heartbeat.remove();
    if (!response.writableEnded) response.end();
  }
}
