// Second half of building a request from @agentmesh/openapi's `RequestParts` (OpenAPI-imported HTTP tools and
// seed 004 dynamic tools): the parts become an `HttpRequestPlan` the guarded sender takes, with each body
// kind encoded for the wire. The lib's argument errors become the runner's INVALID_REQUEST.
import {
  buildRequestParts,
  InvalidArgumentsError,
  type BuildRequestOptions,
  type RequestBody,
  type RequestParts,
  type RequestTemplate,
} from '@agentmesh/openapi';
import { FormData } from 'undici';
import {
  ACCEPT,
  cookieName,
  headerName,
  headerValue,
  parseUrl,
  type HttpRequestPlan,
} from './request-plan.js';
import { InvalidToolArgumentsError } from '../tool-errors.js';

/** `buildRequestParts`, with the model's argument mistakes as `InvalidToolArgumentsError`. */
export function requestPartsFor(
  template: RequestTemplate,
  args: Readonly<Record<string, unknown>>,
  options: BuildRequestOptions = {},
): RequestParts {
  try {
    return buildRequestParts(template, args, options);
  } catch (error) {
    if (error instanceof InvalidArgumentsError) {
      throw new InvalidToolArgumentsError(error.message, { detail: error.detail, cause: error });
    }
    throw error;
  }
}

/**
 * `base` (which may carry a query of its own) + `path` + `queryString`, joined as text so the lib's encoding
 * (literal commas of `explode: false`, `allowReserved`) reaches the wire unchanged.
 */
export function joinUrl(base: string, path: string, queryString: string): URL {
  const cut = base.indexOf('?');
  const prefix = cut === -1 ? base : base.slice(0, cut);
  const baseQuery = cut === -1 ? '' : base.slice(cut + 1);
  const joined = path.startsWith('/') && prefix.endsWith('/') ? prefix.slice(0, -1) + path : prefix + path;
  const query = [baseQuery, queryString].filter((part) => part !== '').join('&');
  return parseUrl(query === '' ? joined : `${joined}?${query}`);
}

export function planFromRequestParts(method: string, url: URL, parts: RequestParts): HttpRequestPlan {
  const headers: Record<string, string> = { accept: ACCEPT };
  for (const [name, value] of Object.entries(parts.header))
    headers[headerName(name)] = headerValue(name, value);
  const cookies = Object.entries(parts.cookie).map(
    ([name, value]) => `${cookieName(name)}=${encodeURIComponent(headerValue(name, value))}`,
  );
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  const plan = { method: method.toUpperCase(), url, headers, credentialHeaders: new Set<string>() };
  if (parts.body === undefined) return plan;
  // The body's own media type wins over a content-type argument; multipart leaves it to undici (boundary).
  delete headers['content-type'];
  if (parts.body.kind !== 'multipart') headers['content-type'] = parts.contentType ?? 'application/json';
  return { ...plan, body: encodeBody(parts.body) };
}

function encodeBody(body: RequestBody): string | Uint8Array | FormData {
  switch (body.kind) {
    case 'json':
    case 'form':
    case 'text':
      return body.text;
    case 'binary':
      return body.bytes;
    case 'multipart': {
      const form = new FormData();
      for (const part of body.parts) {
        if (typeof part.value === 'string') form.append(part.name, part.value);
        else {
          const file = new Blob([part.value], { type: part.contentType ?? 'application/octet-stream' });
          form.append(part.name, file, part.filename ?? part.name);
        }
      }
      return form;
    }
  }
}
