// Seed 000 blind execution, first half: puts the model's arguments into an HTTP request as the tool's
// `execution` says. Each argument goes where `argument_locations` names, else where `param_placement` says
// (default: GET/DELETE → query, others → body); `{name}` placeholders in the URL are always filled from the
// argument of that name. GET and DELETE never carry a body: their body arguments go to the query.
//
// The body is written as `content_type` says: JSON (`application/json`, `…+json`; the default), a form
// (`application/x-www-form-urlencoded`; nested objects as `a[b]=c`, arrays repeating the key), multipart
// (`multipart/form-data`; one text part per form pair, the boundary set by the HTTP client), plain text
// (`text/plain`: the one body argument's text; several are the model's mistake) or XML (`application/xml`,
// `text/xml`, `…+xml`; see xml-body.ts).
import type { HttpToolExecution } from '@agentmesh/protocol';
import { FormData } from 'undici';
import { flattenParam, scalarText } from './param-encoding.js';
import { ACCEPT, headerName, headerValue, parseUrl, type HttpRequestPlan } from './request-plan.js';
import { InvalidToolArgumentsError, ToolDefinitionError } from '../tool-errors.js';
import { fillUrlTemplate, placeholderNames } from './url-template.js';
import { xmlBody } from './xml-body.js';

type ValueLocation = 'query' | 'header' | 'cookie' | 'body';

const FORM = 'application/x-www-form-urlencoded';
const MULTIPART = 'multipart/form-data';
const JSON_TYPE = 'application/json';
const TEXT = 'text/plain';

export function buildSeed000Request(
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
  const body = encodeBody(contentType, bodyFields);
  // A multipart body's content type carries its boundary, which only the HTTP client knows.
  if (!(body instanceof FormData)) headers['content-type'] = contentType;
  return { method: execution.method, url, headers, body, credentialHeaders: new Set() };
}

function fallbackLocation(execution: HttpToolExecution, carriesBody: boolean): 'query' | 'body' {
  const placement = execution.param_placement;
  // `path` placement means "fill the placeholders"; whatever is left goes where the method suggests.
  if (placement === 'query' || placement === 'body') return placement;
  return carriesBody ? 'body' : 'query';
}

function encodeBody(contentType: string, fields: Record<string, unknown>): string | FormData {
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (mediaType === JSON_TYPE || mediaType.endsWith('+json')) return JSON.stringify(fields);
  if (mediaType === FORM || mediaType === MULTIPART) {
    const pairs = Object.entries(fields).flatMap(([name, value]) => flattenParam(name, value));
    if (mediaType === FORM) {
      const form = new URLSearchParams();
      for (const [key, text] of pairs) form.append(key, text);
      return form.toString();
    }
    const form = new FormData();
    for (const [key, text] of pairs) form.append(key, text);
    return form;
  }
  if (mediaType === TEXT) return plainText(fields);
  if (mediaType === 'application/xml' || mediaType === 'text/xml' || mediaType.endsWith('+xml')) {
    return xmlBody(fields);
  }
  throw new ToolDefinitionError(
    `the tool's content_type ${contentType} is not supported (JSON, ${FORM}, ${MULTIPART}, ${TEXT} and XML bodies are)`,
  );
}

function plainText(fields: Record<string, unknown>): string {
  const present = Object.entries(fields).filter(([, value]) => value !== undefined && value !== null);
  if (present.length > 1) {
    throw new InvalidToolArgumentsError(
      `this tool sends a text/plain body, which carries one argument; got ${present.map(([name]) => name).join(', ')}`,
    );
  }
  return present[0] === undefined ? '' : scalarText(present[0][1]);
}
