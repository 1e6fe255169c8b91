/**
 * A real HTTP server on 127.0.0.1 standing in for the gateway in unit tests: each test says how it
 * answers; every request is recorded (method, path, headers, body), and each connection's end can be
 * awaited. Also builds valid task events and SSE frames exactly as the gateway writes them.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sseEventName, type TaskEvent } from '@agentmesh/protocol';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Settles when the client's connection for this request has closed. */
  closed: Promise<void>;
}

export type StandInHandler = (
  request: RecordedRequest,
  response: ServerResponse,
  index: number,
) => void | Promise<void>;

export interface StandInGateway {
  url: string;
  requests: RecordedRequest[];
  /** Replaces how the server answers. */
  handle(handler: StandInHandler): void;
  stop(): Promise<void>;
}

export async function startStandInGateway(handler?: StandInHandler): Promise<StandInGateway> {
  let current: StandInHandler =
    handler ??
    ((_request, response) => {
      response.writeHead(500).end('no handler');
    });
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        closed: new Promise((resolve) => res.once('close', () => resolve())),
      };
      const index = requests.push(recorded) - 1;
      Promise.resolve(current(recorded, res, index)).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(error));
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    handle(next) {
      current = next;
    },
    async stop() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

export const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

const BASE = { trace_id: TRACE_ID, ts: '2026-01-01T00:00:00.000Z', attempt: 1 } as const;

export const chunkEvent = (seq: number, delta: string): TaskEvent => ({
  ...BASE,
  seq,
  type: 'message_chunk',
  data: { delta },
});

export const doneEvent = (seq: number, message: string): TaskEvent => ({
  ...BASE,
  seq,
  type: 'done',
  data: {
    message,
    steps: 1,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    duration_ms: 5,
  },
});

export const errorEvent = (seq: number, code: 'LLM_ERROR' | 'CANCELLED', message: string): TaskEvent => ({
  ...BASE,
  seq,
  type: 'error',
  data: { code, message, retryable: false },
});

/** One event as the gateway's sse-stream writes it. */
export const sseFrame = (event: TaskEvent): string =>
  `id: ${event.seq}\nevent: ${sseEventName(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
};

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Writes `frames` and ends the response: a complete, well-behaved stream. */
export function sendSse(response: ServerResponse, frames: string): void {
  response.writeHead(200, SSE_HEADERS).end(frames);
}

/**
 * Writes `text`, waits for `cut` and then drops the connection without ending the response. The test
 * settles `cut` once its client has taken what it needs from `text`: data still queued in the client
 * when the connection fails may be discarded, and the test must not depend on a race.
 */
export async function sendSseThenCut(
  response: ServerResponse,
  text: string,
  cut: Promise<void>,
): Promise<void> {
  response.writeHead(200, SSE_HEADERS);
  response.flushHeaders();
  if (text !== '') response.write(text);
  await cut;
  response.socket?.destroy();
}

/** Waits for the client to close `request`'s connection, failing after `ms` rather than at the test timeout. */
export async function connectionClosed(request: RecordedRequest, ms = 5_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the client kept ${request.path} open for ${ms} ms`)), ms);
  });
  try {
    await Promise.race([request.closed, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A promise and the function that settles it. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** A port on which nothing listens (it was just released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}
