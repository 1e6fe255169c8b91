/**
 * Routes of the recording API: a method and a path pattern with `:param` segments. When several
 * routes match, the one added last wins, so a test can override a default reply for one case.
 */
import type { RecordedRequest } from '../http/recorded-request.js';

export interface RouteReply {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** An object or array is sent as JSON, a string as text/plain, undefined as an empty body. */
  body?: unknown;
}

export interface RoutedRequest extends RecordedRequest {
  /** Values of the route's `:param` segments, URL-decoded. */
  params: Record<string, string>;
}

export interface RouteSpec {
  /** HTTP method, case-insensitive; `*` matches any. */
  method: string;
  /** e.g. `/v1/users/:id/orders`. */
  path: string;
  reply: RouteReply | ((request: RoutedRequest) => RouteReply | Promise<RouteReply>);
  /** Wait this long before replying. */
  delayMs?: number;
}

export interface RouteMatch {
  route: RouteSpec;
  params: Record<string, string>;
}

export class RouteTable {
  readonly #routes: Array<{ spec: RouteSpec; segments: string[] }> = [];

  add(spec: RouteSpec): void {
    if (!spec.path.startsWith('/')) throw new Error(`route path must start with "/", got "${spec.path}"`);
    this.#routes.push({ spec, segments: splitPath(spec.path) });
  }

  match(method: string, path: string): RouteMatch | undefined {
    const segments = splitPath(path);
    for (let i = this.#routes.length - 1; i >= 0; i -= 1) {
      const entry = this.#routes[i];
      if (!entry) continue;
      const methodMatches =
        entry.spec.method === '*' || entry.spec.method.toUpperCase() === method.toUpperCase();
      if (!methodMatches) continue;
      const params = matchSegments(entry.segments, segments);
      if (params) return { route: entry.spec, params };
    }
    return undefined;
  }
}

function splitPath(path: string): string[] {
  return path.split('/').filter((segment) => segment.length > 0);
}

function matchSegments(
  pattern: readonly string[],
  actual: readonly string[],
): Record<string, string> | undefined {
  if (pattern.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, expected] of pattern.entries()) {
    const segment = actual[i] ?? '';
    if (expected.startsWith(':')) {
      params[expected.slice(1)] = safeDecode(segment);
    } else if (expected !== segment) {
      return undefined;
    }
  }
  return params;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
