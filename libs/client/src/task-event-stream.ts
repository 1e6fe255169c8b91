/**
 * Following a task's events over the gateway's SSE endpoint (`GET /v1/tasks/:id/events`) as an async
 * iterable. Each event is validated against the protocol's TaskEvent, and its SSE name against its type
 * (`task_error` for errors; the older `error` is accepted too). The iteration ends after the
 * terminal event (`done`/`error`) or when the gateway answers 204 (nothing more to send). A stream
 * that breaks off, ends early or goes silent past the idle timeout is reopened with `Last-Event-ID` =
 * the last seq seen, with exponential backoff; events at or below that seq are skipped, so none is
 * yielded twice. After too many consecutive attempts that brought no new event, it gives up. A finished
 * task whose events have expired is the gateway's 410 EVENTS_EXPIRED: not retryable, so it ends the
 * iteration with a MeshApiError carrying the final status.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { isSseEventNameOf, isTerminalEvent, TaskEvent, TraceIdInput } from '@agentmesh/protocol';
import { MeshClientError, MeshProtocolError, MeshUnreachableError } from './errors.js';
import type { GatewayHttp } from './gateway-http.js';
import { SseLimitError, SseParser, type SseMessage } from '@agentmesh/sse';

export interface ReconnectPolicy {
  /** Consecutive reconnection attempts that bring no new event before giving up. */
  maxAttempts: number;
  /** Delay before the first reconnection (or the server's `retry:`); doubles after each failure. */
  initialDelayMs: number;
  /** Upper bound of one delay. */
  maxDelayMs: number;
}

export const DEFAULT_RECONNECT_POLICY: ReconnectPolicy = Object.freeze({
  maxAttempts: 5,
  initialDelayMs: 250,
  maxDelayMs: 5_000,
});

/** Three of the gateway's default 15 s heartbeats. */
export const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

export interface FollowEventsOptions {
  /** Resume after this seq (events up to it are not yielded). */
  lastEventId?: number;
  /** Stops the iteration: it throws the signal's reason and closes the connection. */
  signal?: AbortSignal;
  reconnect?: Partial<ReconnectPolicy>;
  /** A connection that carries nothing, not even a heartbeat, for this long is reopened; 0 = never. */
  idleTimeoutMs?: number;
}

export async function* followTaskEvents(
  http: GatewayHttp,
  traceId: string,
  options: FollowEventsOptions = {},
): AsyncGenerator<TaskEvent, void, undefined> {
  const policy = { ...DEFAULT_RECONNECT_POLICY, ...options.reconnect };
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const { signal } = options;
  const path = `v1/tasks/${encodeURIComponent(traceId)}/events`;
  const what = `the event stream of task ${traceId}`;
  const expectedTraceId = TraceIdInput.safeParse(traceId).data;
  let lastSeq = options.lastEventId ?? 0;
  let failures = 0;
  let opened = false;
  let serverRetryMs: number | undefined;

  for (;;) {
    signal?.throwIfAborted();
    const connection = new AbortController();
    const idle = new IdleTimer(idleTimeoutMs, () => connection.abort(new StreamIdleError(idleTimeoutMs)));
    let lastError: MeshClientError;
    try {
      idle.arm();
      const response = await http.send('GET', path, {
        headers: {
          accept: 'text/event-stream',
          ...(lastSeq > 0 ? { 'last-event-id': String(lastSeq) } : {}),
        },
        signal: signal ? AbortSignal.any([signal, connection.signal]) : connection.signal,
      });
      if (response.status === 204) {
        await response.body?.cancel();
        return;
      }
      if (!response.ok) throw await http.failure(response, what);
      const contentType = response.headers.get('content-type') ?? '';
      if (!contentType.includes('text/event-stream') || !response.body) {
        await response.body?.cancel();
        throw new MeshProtocolError(
          `${what} answered ${response.status} ${contentType || 'without a body type'}`,
        );
      }
      opened = true;
      const parser = new SseParser();
      const decoder = new TextDecoder();
      const reader = response.body.getReader();
      try {
        for (;;) {
          idle.arm();
          const { done, value } = await reader.read();
          // A slow consumer is not a silent gateway.
          idle.disarm();
          if (done) break;
          for (const message of parser.push(decoder.decode(value, { stream: true }))) {
            const event = parseEvent(message, what, expectedTraceId);
            if (event.seq <= lastSeq) continue;
            lastSeq = event.seq;
            failures = 0;
            yield event;
            if (isTerminalEvent(event)) return;
          }
        }
      } finally {
        idle.disarm();
        serverRetryMs = parser.retryMs ?? serverRetryMs;
        // Closes the connection when the consumer stops early or the stream failed.
        reader.cancel().catch(() => undefined);
      }
      lastError = new MeshUnreachableError(`${what} ended before the task's terminal event`);
    } catch (error) {
      idle.disarm();
      if (signal?.aborted) throw signal.reason;
      lastError = asStreamFailure(error, what);
      // A stream that never opened is the caller's to retry (a wrong URL should fail at once);
      // only a stream that was following the task is reopened.
      if (!lastError.retryable || !opened) throw lastError;
    }

    failures += 1;
    if (failures > policy.maxAttempts) {
      throw new MeshUnreachableError(
        `${what} broke off ${failures} times in a row without a new event; last: ${lastError.message}`,
        { cause: lastError },
      );
    }
    await backoff(policy, failures, serverRetryMs, signal);
  }
}

function parseEvent(message: SseMessage, what: string, expectedTraceId: string | undefined): TaskEvent {
  let json: unknown;
  try {
    json = JSON.parse(message.data) as unknown;
  } catch (error) {
    throw new MeshProtocolError(
      `${what}: event ${message.id ?? '(no id)'} is not JSON: ${JSON.stringify(message.data.slice(0, 200))}`,
      undefined,
      { cause: error },
    );
  }
  const parsed = TaskEvent.safeParse(json);
  if (!parsed.success)
    throw MeshProtocolError.fromZod(`${what}: event ${message.id ?? '(no id)'}`, parsed.error);
  // SSE's default name, `message`, is a frame without a name; a name must fit the data's type (the
  // wire name, `task_error` for errors, or the type itself, as older gateways named errors).
  if (message.event !== 'message' && !isSseEventNameOf(message.event, parsed.data.type)) {
    throw new MeshProtocolError(
      `${what}: event ${parsed.data.seq} is named ${message.event} but is a ${parsed.data.type} event`,
    );
  }
  if (expectedTraceId !== undefined && parsed.data.trace_id !== expectedTraceId) {
    throw new MeshProtocolError(`${what}: event ${parsed.data.seq} belongs to task ${parsed.data.trace_id}`);
  }
  return parsed.data;
}

function asStreamFailure(error: unknown, what: string): MeshClientError {
  if (error instanceof MeshClientError) return error;
  if (error instanceof SseLimitError) {
    return new MeshProtocolError(`${what}: ${error.message}`, undefined, { cause: error });
  }
  if (error instanceof StreamIdleError) {
    return new MeshUnreachableError(`${what}: ${error.message}`, { cause: error });
  }
  // A body read that failed: the connection was reset or cut.
  return new MeshUnreachableError(`${what} broke off`, { cause: error });
}

async function backoff(
  policy: ReconnectPolicy,
  failures: number,
  serverRetryMs: number | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  const base = Math.min(serverRetryMs ?? policy.initialDelayMs, policy.maxDelayMs);
  const exponential = Math.min(base * 2 ** (failures - 1), policy.maxDelayMs);
  // Jitter, so that clients cut off together by a gateway restart do not come back together.
  const ms = exponential * (0.5 + Math.random() / 2);
  try {
    await delay(ms, undefined, signal ? { signal } : {});
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

/** Why a silent connection was closed (the gateway sends heartbeats, so silence means a dead link). */
class StreamIdleError extends Error {
  override readonly name = 'StreamIdleError';
  constructor(ms: number) {
    super(`nothing arrived for ${ms} ms, not even a heartbeat`);
  }
}

class IdleTimer {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {}

  arm(): void {
    if (this.ms <= 0) return;
    if (this.timer) this.timer.refresh();
    // The open connection keeps the process alive, not this timer.
    else this.timer = setTimeout(this.onIdle, this.ms).unref();
  }

  disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
