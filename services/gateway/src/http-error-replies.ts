/**
 * Every error the HTTP server sends is the one error body `{code, message, detail?}`:
 * - rejections the routes return;
 * - Fastify's own failures: bad JSON, an empty JSON body, a wrong content type, a body too large, an
 *   unknown route or method, a malformed URL, an over-long path parameter, a request arriving while
 *   the server closes;
 * - what Node's HTTP server refuses before Fastify sees a request (a malformed request line or header,
 *   header fields too large, headers that take too long, an unsupported `Expect`, a missing `Host`),
 *   written straight to the socket as a complete HTTP response.
 * Anything else is an INTERNAL error whose details stay in the log.
 */
import {
  STATUS_CODES,
  maxHeaderSize as defaultMaxHeaderSize,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '@agentmesh/runtime';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ExpectationFailed,
  HeaderFieldsTooLarge,
  InternalFailure,
  InvalidRequest,
  NotFound,
  PayloadTooLarge,
  Rejection,
  RequestTimeout,
  sendRejection,
  ShuttingDown,
  UnsupportedMediaType,
  UriTooLong,
} from './errors.js';

interface FastifyFailure {
  statusCode?: number;
  code?: string;
  message?: string;
}

/** A Fastify failure (or anything thrown in a handler) as a rejection; undefined for a server fault. */
function rejectionOf(error: unknown, bodyLimitBytes: number): Rejection | undefined {
  if (error instanceof Rejection) return error;
  const failure = (typeof error === 'object' && error !== null ? error : {}) as FastifyFailure;
  const status = failure.statusCode;
  if (status === 413 || failure.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new PayloadTooLarge(bodyLimitBytes);
  if (status === 415 || failure.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new UnsupportedMediaType();
  if (failure.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) {
    return new InvalidRequest('the request body is not valid JSON');
  }
  if (failure.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return new InvalidRequest('the request body is empty; send a JSON object');
  }
  if (failure.code === 'FST_ERR_BAD_URL') return new InvalidRequest('the URL is not validly percent-encoded');
  if (failure.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return new UriTooLong('a path segment of the URL is longer than the gateway reads');
  }
  if (status !== undefined && status >= 400 && status < 500) {
    return new InvalidRequest(failure.message || 'invalid request');
  }
  return undefined;
}

/**
 * Options of the Fastify instance: failures Fastify would answer in its own shape (a malformed URL, an
 * over-long path parameter, Node's parser errors, a request while closing) come here instead.
 */
export function errorReplyOptions(log: Logger) {
  return {
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const rejection = rejectionOf(error, 0);
      if (rejection) return sendRejection(reply, rejection);
      log.error({ err: error, method: request.method }, 'request failed');
      return sendRejection(reply, new InternalFailure({ cause: error }));
    },
    clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => replyToClientError(error, socket),
    // The 503 Fastify would send has its own body; `installErrorReplies` answers it instead.
    return503OnClosing: false,
    // Node would answer a missing Host with an empty 400; `installErrorReplies` answers it instead.
    http: { requireHostHeader: false },
  } as const;
}

/**
 * Makes every reply the gateway did not produce itself carry the one error body. `closing` is aborted
 * when the server starts closing: later requests (pipelined on an open connection) get 503.
 */
export function installErrorReplies(
  app: FastifyInstance,
  log: Logger,
  { bodyLimitBytes, closing }: { bodyLimitBytes: number; closing: AbortSignal },
): void {
  app.setErrorHandler((error, request, reply) => {
    // Some routes have a limit of their own (the plugin import).
    const rejection = rejectionOf(error, request.routeOptions.bodyLimit ?? bodyLimitBytes);
    if (rejection) return sendRejection(reply, rejection);
    log.error({ err: error, method: request.method, route: request.routeOptions.url }, 'request failed');
    return sendRejection(reply, new InternalFailure({ cause: error }));
  });
  app.setNotFoundHandler((request, reply) =>
    sendRejection(reply, new NotFound(`no route ${request.method} ${request.url.split('?')[0]}`)),
  );
  app.addHook('onRequest', async (request, reply) => {
    if (closing.aborted) return sendRejection(reply, new ShuttingDown());
    // RFC 9112 §3.2: a server must refuse an HTTP/1.1 request without Host.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      return sendRejection(reply, new InvalidRequest('an HTTP/1.1 request needs a Host header'));
    }
    return undefined;
  });
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    writeRejection(response, new ExpectationFailed());
    request.resume();
  });
}

function writeRejection(response: ServerResponse, rejection: Rejection): void {
  const body = JSON.stringify(rejection.toBody());
  response.writeHead(rejection.httpStatus, {
    ...rejection.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  response.end(body);
}

/**
 * Node's parser refused what came on `socket`; there is no request, so the response is written to the
 * socket by hand, then the connection is closed (the parser cannot continue on it).
 */
function replyToClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // A response already under way on this connection would be corrupted by a second one: just close.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const rejection = clientErrorRejection(error);
  const body = JSON.stringify(rejection.toBody());
  const head = [
    `HTTP/1.1 ${rejection.httpStatus} ${STATUS_CODES[rejection.httpStatus] ?? 'Error'}`,
    ...Object.entries(rejection.headers).map(([name, value]) => `${name}: ${value}`),
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
}

function clientErrorRejection(error: NodeJS.ErrnoException): Rejection {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HeaderFieldsTooLarge(defaultMaxHeaderSize);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new InvalidRequest('a chunk extension of the request body is too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeout();
    default:
      return new InvalidRequest('malformed HTTP request');
  }
}
