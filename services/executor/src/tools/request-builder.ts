// Seed 000 blind execution, first half: puts the model's arguments into an HTTP request as the tool's
// `execution` says. Each argument goes where `argument_locations` names, else where `param_placement` says
// (default: GET/DELETE → query, others → body); `{name}` placeholders in the URL are always filled from the
// argument of that name. GET and DELETE never carry a body: their body arguments go to the query.
import type { HttpMethod, HttpToolExecution } from '@agentmesh/protocol';
import { flattenParam, scalarText } from './param-encoding.js';
import { InvalidToolArgumentsError, ToolDefinitionError } from './tool-errors.js';
import { fillUrlTemplate, placeholderNames } from './url-template.js';

/** A request ready to send. Header names are lower case. */
export interface HttpRequestPlan {
  readonly method: HttpMethod;
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly body?: string;
  /** Headers that carry credentials: dropped when a redirect leaves the origin. */
  readonly credentialHeaders: Set<string>;
}

type ValueLocation = 'query' | 'header' | 'cookie' | 'body';

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';
const ACCEPT = 'application/json, text/plain;q=0.9, */*;q=0.8';
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FORBIDDEN_IN_HEADER_VALUE = /[\r\n\0]/;

export function buildHttpRequest(
  execution: HttpToolExecution,
  args: Readonly<Record<string, unknown>>,
): HttpRequestPlan {
  const carriesBody = execution.method !== 'GET' && execution.method !== 'DELETE';
  const fallback = fallbackLocation(execution, carriesBody);
  const inPath = new Set(placeholderNames(execution.url));
  const url = parseUrl(fillUrlTemplate(execution.url, args));
  const headers: Record<string, string> = { accept: ACCEPT };
  const cookies: string[] = [];
  const bodyFields: Record<string, unknown> = {};

  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || inPath.has(name)) continue;
    const declared = execution.argument_locations?.[name];
    if (declared === 'path') {
      throw new ToolDefinitionError(
        `the tool places argument ${name} in the path, but its URL has no {${name}}`,
      );
    }
    let location: ValueLocation = declared ?? fallback;
    if (location === 'body' && !carriesBody) location = 'query';
    if (location === 'body') bodyFields[name] = value;
    else if (value === null) continue;
    else if (location === 'query') {
      for (const [key, text] of flattenParam(name, value)) url.searchParams.append(key, text);
    } else if (location === 'header') headers[headerName(name)] = headerValue(name, value);
    else cookies.push(`${name}=${encodeURIComponent(headerValue(name, value))}`);
  }
  if (cookies.length > 0) headers.cookie = cookies.join('; ');

  const sendsBody = carriesBody && (Object.keys(bodyFields).length > 0 || fallback === 'body');
  if (!sendsBody) return { method: execution.method, url, headers, credentialHeaders: new Set() };
  const contentType = execution.content_type ?? JSON_TYPE;
  headers['content-type'] = contentType;
  return {
    method: execution.method,
    url,
    headers,
    body: encodeBody(contentType, bodyFields),
    credentialHeaders: new Set(),
  };
}

function fallbackLocation(execution: HttpToolExecution, carriesBody: boolean): 'query' | 'body' {
  const placement = execution.param_placement;
  // `path` placement means "fill the placeholders"; whatever is left goes where the method suggests.
  if (placement === 'query' || placement === 'body') return placement;
  return carriesBody ? 'body' : 'query';
}

function encodeBody(contentType: string, fields: Record<string, unknown>): string {
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (mediaType === FORM) {
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(fields)) {
      for (const [key, text] of flattenParam(name, value)) form.append(key, text);
    }
    return form.toString();
  }
  if (mediaType === JSON_TYPE || mediaType.endsWith('+json')) return JSON.stringify(fields);
  throw new ToolDefinitionError(
    `the tool's content_type ${contentType} is not supported (JSON and ${FORM} bodies are)`,
  );
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch (error) {
    throw new ToolDefinitionError(`the tool's URL does not parse once filled in`, { cause: error });
  }
}

function headerName(name: string): string {
  if (!HEADER_NAME.test(name))
    throw new ToolDefinitionError(`argument ${name} cannot be an HTTP header name`);
  return name.toLowerCase();
}

function headerValue(name: string, value: unknown): string {
  const text = scalarText(value);
  if (FORBIDDEN_IN_HEADER_VALUE.test(text)) {
    throw new InvalidToolArgumentsError(`argument ${name} must not contain line breaks or NUL characters`);
  }
  return text;
}
