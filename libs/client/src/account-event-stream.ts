/**
 * Following every event of one account's tasks over the gateway's `GET /v1/events` (SSE, live from the
 * moment of the request, no replay) as an async iterable of validated TaskEvents. An event's type is
 * read from its data, not from the SSE event name. The stream has no resume point (a task's seq is no
 * position in an account's interleaving), so it is not reopened: when the connection ends or goes
 * silent past the idle timeout, the iteration throws MeshUnreachableError (retryable: open a new tail;
 * what happened in between is in each task's own replay).
 */
import { TaskEvent } from '@agentmesh/protocol';
import { SseLimitError, SseParser } from '@agentmesh/sse';
import { MeshClientError, MeshProtocolError, MeshUnreachableError } from './errors.js';
import type { GatewayHttp } from './gateway-http.js';
import { DEFAULT_IDLE_TIMEOUT_MS } from './task-event-stream.js';

export interface TailOptions {
  /** The account to follow: for an admin or trusted caller (an API key follows its own). */
  account?: string;
  /** Stops the iteration: it throws the signal's reason and closes the connection. */
  signal?: AbortSignal;
  /** A connection that carries nothing, not even a heartbeat, for this long is given up; 0 = never. */
  idleTimeoutMs?: number;
  /** Told once the gateway has answered: every event stored from then on is yielded. */
  onOpen?: () => void;
}

export async function* followAccountEvents(
  http: GatewayHttp,
  options: TailOptions = {},
): AsyncGenerator<TaskEvent, never, undefined> {
  const { signal } = options;
  const what =
    options.account === undefined ? "the account's events" : `the events of account ${options.account}`;
  const path =
    options.account === undefined ? 'v1/events' : `v1/events?account=${encodeURIComponent(options.account)}`;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const connection = new AbortController();
  let idle: NodeJS.Timeout | undefined;
  const arm = (): void => {
    if (idleTimeoutMs <= 0) return;
    if (idle) idle.refresh();
    else idle = setTimeout(() => connection.abort(), idleTimeoutMs).unref();
  };
  try {
    arm();
    const response = await http.send('GET', path, {
      headers: { accept: 'text/event-stream' },
      signal: signal ? AbortSignal.any([signal, connection.signal]) : connection.signal,
    });
    if (!response.ok) throw await http.failure(response, what);
    const contentType = response.headers.get('content-type') ?? '';
    if (!contentType.includes('text/event-stream') || !response.body) {
      await response.body?.cancel();
      throw new MeshProtocolError(
        `${what} answered ${response.status} ${contentType || 'without a body type'}`,
      );
    }
    options.onOpen?.();
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    try {
      for (;;) {
        arm();
        const { done, value } = await reader.read();
        clearTimeout(idle);
        idle = undefined;
        if (done) break;
        for (const message of parser.push(decoder.decode(value, { stream: true }))) {
          yield parseEvent(message.data, what);
        }
      }
    } finally {
      reader.cancel().catch(() => undefined);
    }
    throw new MeshUnreachableError(
      `${what}: the gateway ended the stream (stopping, or this client fell behind)`,
    );
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (error instanceof MeshClientError) throw error;
    if (error instanceof SseLimitError)
      throw new MeshProtocolError(`${what}: ${error.message}`, undefined, { cause: error });
    if (connection.signal.aborted) {
      throw new MeshUnreachableError(
        `${what}: nothing arrived for ${idleTimeoutMs} ms, not even a heartbeat`,
        {
          cause: error,
        },
      );
    }
    throw new MeshUnreachableError(`${what} broke off`, { cause: error });
  } finally {
    clearTimeout(idle);
  }
}

function parseEvent(data: string, what: string): TaskEvent {
  let json: unknown;
  try {
    json = JSON.parse(data) as unknown;
  } catch (error) {
    throw new MeshProtocolError(
      `${what}: an event is not JSON: ${JSON.stringify(data.slice(0, 200))}`,
      undefined,
      {
        cause: error,
      },
    );
  }
  const parsed = TaskEvent.safeParse(json);
  if (!parsed.success) throw MeshProtocolError.fromZod(`${what}: an event`, parsed.error);
  return parsed.data;
}
