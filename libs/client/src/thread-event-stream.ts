/**
 * Following every event of every run of one thread over the gateway's `GET /v1/threads/{id}/events`
 * (SSE, from the thread's creation or after `afterId`, then live). Each event comes with its stream id:
 * pass the last one seen as `afterId` to resume after a broken connection without losing or repeating an
 * event. The iteration ends (MeshUnreachableError) when the connection ends; reopening it is the caller's
 * choice, with `afterId`.
 */
import { TaskEvent } from '@agentmesh/protocol';
import { SseParser } from '@agentmesh/sse';
import { MeshClientError, MeshProtocolError, MeshUnreachableError } from './errors.js';
import type { GatewayHttp } from './gateway-http.js';

export interface ThreadEventsOptions {
  /** Resume after this stream id (the `id` of the last event seen). */
  afterId?: number;
  signal?: AbortSignal;
  /** Told once the gateway has answered. */
  onOpen?: () => void;
}

/** One event of a thread's run, with its position in the thread's stream. */
export interface ThreadEvent {
  id: number;
  event: TaskEvent;
}

export async function* followThreadEvents(
  http: GatewayHttp,
  threadId: string,
  options: ThreadEventsOptions = {},
): AsyncGenerator<ThreadEvent, never, undefined> {
  const what = `the events of thread ${threadId}`;
  try {
    const response = await http.send('GET', `v1/threads/${encodeURIComponent(threadId)}/events`, {
      headers: {
        accept: 'text/event-stream',
        ...(options.afterId === undefined ? {} : { 'last-event-id': String(options.afterId) }),
      },
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    if (!response.ok) throw await http.failure(response, what);
    if (!response.body) throw new MeshProtocolError(`${what} answered without a body`);
    options.onOpen?.();
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const message of parser.push(decoder.decode(value, { stream: true }))) {
          const parsed = TaskEvent.safeParse(JSON.parse(message.data));
          if (!parsed.success) throw MeshProtocolError.fromZod(`${what}: an event`, parsed.error);
          yield { id: Number(message.id), event: parsed.data };
        }
      }
    } finally {
      reader.cancel().catch(() => undefined);
    }
    throw new MeshUnreachableError(`${what}: the gateway ended the stream`);
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (error instanceof MeshClientError) throw error;
    throw new MeshUnreachableError(`${what} broke off`, { cause: error });
  }
}
