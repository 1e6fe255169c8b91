/**
 * A real HTTP API on 127.0.0.1 that stands in for an upstream service in tests: it replies as its
 * routes declare and records every request (matched or not) for the test to inspect.
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLoopbackServer } from '../http/loopback-server.js';
import { recordRequest, type RecordedRequest } from '../http/recorded-request.js';
import { RequestLog } from '../http/request-log.js';
import { RouteTable, type RouteReply, type RouteSpec, type RoutedRequest } from './route-table.js';

export interface RecordingApiOptions {
  routes?: readonly RouteSpec[];
}

export interface RecordedApiRequest extends RecordedRequest {
  /** Route parameters; empty when no route matched. */
  params: Record<string, string>;
  /** `METHOD /pattern` of the route that answered; undefined when none matched (404). */
  route: string | undefined;
}

export interface RecordingApi {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: RecordedApiRequest[];
  /** Adds routes; a later route wins over an earlier one matching the same request. */
  route(...routes: RouteSpec[]): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedApiRequest[]>;
  /** Closes the server and every open connection. */
  stop(): Promise<void>;
}

export async function startRecordingApi(options: RecordingApiOptions = {}): Promise<RecordingApi> {
  const table = new RouteTable();
  for (const route of options.routes ?? []) table.add(route);
  const log = new RequestLog<RecordedApiRequest>();

  const server = await startLoopbackServer((req, res) => {
    void (async () => {
      const recorded = await recordRequest(req);
      const match = table.match(recorded.method, recorded.path);
      const request: RecordedApiRequest = {
        ...recorded,
        params: match?.params ?? {},
        route: match ? `${match.route.method.toUpperCase()} ${match.route.path}` : undefined,
      };
      log.add(request);
      if (!match) {
        return sendReply(res, {
          status: 404,
          body: { error: 'not_found', message: `no route for ${recorded.method} ${recorded.path}` },
        });
      }
      if (match.route.delayMs) await sleep(match.route.delayMs);
      const reply =
        typeof match.route.reply === 'function'
          ? await match.route.reply(request as RoutedRequest)
          : match.route.reply;
      sendReply(res, reply);
    })().catch((error: unknown) => {
      if (res.headersSent) return res.destroy();
      const message = error instanceof Error ? error.message : String(error);
      sendReply(res, { status: 500, body: { error: 'recording_api_failed', message } });
    });
  });

  return {
    url: server.origin,
    requests: log.entries,
    route: (...routes) => routes.forEach((route) => table.add(route)),
    waitForRequests: (count, timeoutMs) => log.waitForCount(count, timeoutMs),
    stop: () => server.stop(),
  };
}

function sendReply(res: ServerResponse, reply: RouteReply): void {
  if (res.destroyed) return;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.headers ?? {})) headers[name.toLowerCase()] = value;
  let payload = '';
  if (typeof reply.body === 'string') {
    payload = reply.body;
    headers['content-type'] ??= 'text/plain; charset=utf-8';
  } else if (reply.body !== undefined) {
    payload = JSON.stringify(reply.body);
    headers['content-type'] ??= 'application/json';
  }
  headers['content-length'] = String(Buffer.byteLength(payload));
  res.writeHead(reply.status ?? 200, headers);
  res.end(payload);
}
