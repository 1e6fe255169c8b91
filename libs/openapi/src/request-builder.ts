// The reverse of conversion: a model's arguments (plus seed 004's `fixed_params`, which the model's
// arguments override) become HTTP request parts, each argument placed by its binding: the path
// template filled and URL-encoded (a value that would make a `.`/`..` segment is refused: see
// path-segments.ts), query/header/cookie values serialised by style/explode, and the
// body encoded for its media type (JSON, form with bracket notation, multipart with file parts).

import {
  BodyKind,
  ParameterLocation,
  type ArgumentBinding,
  type NullAsAbsent,
  type OperationConversion,
} from './conversion.js';
import { InvalidArgumentsError } from './errors.js';
import type { FixedParams } from '@agentmesh/protocol';
import { isJsonObject, type JsonObject } from './json.js';
import {
  scalarText,
  queryString,
  serialiseCookieValue,
  serialiseFormField,
  serialiseHeaderValue,
  serialisePathValue,
  serialiseQueryValue,
  type QueryPair,
} from './parameter-styles.js';
import { splitPathKey } from './path-key.js';
import { isDotSegment, templateSegments } from './path-segments.js';

export type RequestTemplate = Pick<
  OperationConversion,
  'method' | 'path' | 'arguments' | 'body' | 'nullAsAbsent'
>;

export interface MultipartPart {
  readonly name: string;
  readonly value: string | Uint8Array;
  readonly filename?: string;
  readonly contentType?: string;
}

export type RequestBody =
  | { readonly kind: 'json'; readonly value: unknown; readonly text: string }
  | { readonly kind: 'form'; readonly fields: Array<[string, string]>; readonly text: string }
  | { readonly kind: 'multipart'; readonly parts: MultipartPart[] }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'binary'; readonly bytes: Uint8Array };

export interface RequestParts {
  readonly method: string | undefined;
  /**
   * The path template with every `{name}` filled and URL-encoded; a path key's `#fragment` and `?query`
   * are not in it (the query is in `query`, see path-key.ts).
   */
  readonly path: string;
  /** Query parameters in order, unencoded (a list joined by its delimiter); a path key's fixed ones first. */
  readonly query: Array<[string, string]>;
  /** The encoded query string without `?`; empty when there is none. */
  readonly queryString: string;
  readonly header: Record<string, string>;
  readonly cookie: Record<string, string>;
  readonly body: RequestBody | undefined;
  /** The body's media type (for multipart the caller's form-data encoder adds the boundary). */
  readonly contentType: string | undefined;
  /** Arguments no binding knows, and fixed parameters that had nowhere to go; left out of the request. */
  readonly ignored: string[];
}

export interface BuildRequestOptions {
  /** Seed 004 `fixed_params`; an argument of the model for the same place wins. */
  readonly fixedParams?: Partial<FixedParams>;
}

interface Placed {
  readonly binding: Pick<
    ArgumentBinding,
    'in' | 'name' | 'style' | 'explode' | 'allowReserved' | 'contentType' | 'file'
  >;
  readonly value: unknown;
}

export function buildRequestParts(
  conversion: RequestTemplate,
  args: unknown,
  options: BuildRequestOptions = {},
): RequestParts {
  if (args !== undefined && args !== null && !isJsonObject(args)) {
    throw new InvalidArgumentsError('tool arguments must be a JSON object', { received: typeof args });
  }
  const given = pruneAbsentNulls(args ?? {}, conversion.nullAsAbsent);
  const placed: Placed[] = [];
  let wholeBody: { value: unknown } | undefined;
  const known = new Set<string>();
  for (const binding of conversion.arguments) {
    known.add(binding.property);
    const value = given[binding.property];
    if (value === undefined) continue;
    if (binding.in === ParameterLocation.BODY && binding.name === undefined) wholeBody = { value };
    else placed.push({ binding, value });
  }
  const ignored = Object.keys(given).filter((key) => !known.has(key));
  mergeFixedParams(placed, conversion, options.fixedParams ?? {});

  const at = (location: ParameterLocation): Placed[] => placed.filter((p) => p.binding.in === location);
  const { template, fixedQuery } = splitPathKey(conversion.path ?? '');
  const path = fillPath(template, at(ParameterLocation.PATH));
  const queryArguments = at(ParameterLocation.QUERY);
  // The key's fixed query goes first; an argument of the same name (declared by the operation) replaces it.
  const keyPairs = fixedQuery
    .filter(([name]) => !queryArguments.some((p) => p.binding.name === name))
    .map(([name, value]): QueryPair => ({ name, parts: [value], delimiter: '' }));
  const queryPairs = [
    ...keyPairs,
    ...queryArguments.flatMap(({ binding, value }) =>
      serialiseQueryValue(
        binding.name!,
        encodeContent(value, binding),
        binding.style ?? 'form',
        binding.explode ?? true,
      ).map((pair): QueryPair & { allowReserved?: boolean } => ({
        ...pair,
        allowReserved: binding.allowReserved ?? false,
      })),
    ),
  ];
  const header: Record<string, string> = {};
  for (const { binding, value } of at(ParameterLocation.HEADER)) {
    header[binding.name!] = serialiseHeaderValue(encodeContent(value, binding), binding.explode ?? false);
  }
  const cookie: Record<string, string> = {};
  for (const { binding, value } of at(ParameterLocation.COOKIE)) {
    cookie[binding.name!] = serialiseCookieValue(encodeContent(value, binding));
  }
  const body = buildBody(conversion, wholeBody, at(ParameterLocation.BODY), ignored);
  return {
    method: conversion.method,
    path,
    query: queryPairs.map((pair) => [pair.name, pair.parts.join(pair.delimiter)]),
    queryString: queryString(queryPairs),
    header,
    cookie,
    body,
    contentType: body === undefined ? undefined : (conversion.body?.contentType ?? 'application/json'),
    ignored,
  };
}

/** Fixed parameters fill what the model did not give; the model's arguments win (seed 004 §10.6). */
function mergeFixedParams(placed: Placed[], conversion: RequestTemplate, fixed: Partial<FixedParams>): void {
  const locations = [
    ParameterLocation.PATH,
    ParameterLocation.QUERY,
    ParameterLocation.HEADER,
    ParameterLocation.COOKIE,
    ParameterLocation.BODY,
  ] as const;
  for (const location of locations) {
    for (const [name, value] of Object.entries(fixed[location] ?? {})) {
      if (value === undefined) continue;
      const sameName = (candidate: string | undefined): boolean =>
        location === ParameterLocation.HEADER
          ? candidate?.toLowerCase() === name.toLowerCase()
          : candidate === name;
      if (placed.some((p) => p.binding.in === location && sameName(p.binding.name))) continue;
      const binding = conversion.arguments.find((b) => b.in === location && sameName(b.name));
      placed.push({ binding: binding ?? { in: location, name }, value });
    }
  }
}

function fillPath(template: string, values: readonly Placed[]): string {
  const missing: string[] = [];
  const dotSegments: string[] = [];
  const filled = templateSegments(template).map((segment) => {
    const names: string[] = [];
    const text = segment.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
      names.push(name);
      const found = values.find((p) => p.binding.name === name);
      if (found === undefined || found.value === null) {
        missing.push(name);
        return '';
      }
      return serialisePathValue(
        name,
        found.value,
        found.binding.style ?? 'simple',
        found.binding.explode ?? false,
      );
    });
    if (names.length > 0 && isDotSegment(text)) dotSegments.push(...names);
    return text;
  });
  if (missing.length > 0) {
    throw new InvalidArgumentsError(`missing path parameter(s): ${missing.join(', ')}`, { missing });
  }
  if (dotSegments.length > 0) {
    const names = [...new Set(dotSegments)];
    throw new InvalidArgumentsError(
      `path parameter(s) ${names.join(', ')} would make a "." or ".." path segment, which changes the request path; use another value`,
      { dot_segment: names },
    );
  }
  return filled.join('/');
}

function buildBody(
  conversion: RequestTemplate,
  wholeBody: { value: unknown } | undefined,
  fields: readonly Placed[],
  ignored: string[],
): RequestBody | undefined {
  const binding = conversion.body;
  if (!binding) {
    if (fields.length === 0) return undefined;
    // Fixed parameters defaulted to `body` (seed 004) for an operation that declares none.
    if (conversion.method === 'GET' || conversion.method === 'HEAD') {
      ignored.push(...fields.map((field) => field.binding.name!));
      return undefined;
    }
    return jsonBody(Object.fromEntries(fields.map((field) => [field.binding.name!, field.value])));
  }
  if (binding.whole) {
    const extra = Object.fromEntries(fields.map((field) => [field.binding.name!, field.value]));
    if (wholeBody === undefined) {
      return fields.length > 0 && binding.kind === BodyKind.JSON ? jsonBody(extra) : undefined;
    }
    const value = isJsonObject(wholeBody.value) ? { ...extra, ...wholeBody.value } : wholeBody.value;
    if (!isJsonObject(wholeBody.value)) ignored.push(...Object.keys(extra));
    return wholeValueBody(binding.kind, value);
  }
  if (fields.length === 0 && !binding.required) return undefined;
  switch (binding.kind) {
    case BodyKind.FORM: {
      const pairs = fields.flatMap(({ binding: b, value }) =>
        serialiseFormField(b.name!, value, b.style ?? 'form', b.explode ?? true),
      );
      return { kind: 'form', fields: pairs, text: new URLSearchParams(pairs).toString() };
    }
    case BodyKind.MULTIPART:
      return { kind: 'multipart', parts: fields.flatMap(multipartParts) };
    default:
      return jsonBody(Object.fromEntries(fields.map((field) => [field.binding.name!, field.value])));
  }
}

function wholeValueBody(kind: string, value: unknown): RequestBody {
  switch (kind) {
    case BodyKind.TEXT:
      return { kind: 'text', text: scalarText(value) };
    case BodyKind.BINARY:
      return { kind: 'binary', bytes: decodeBinary(scalarText(value)).bytes };
    case BodyKind.FORM: {
      const pairs = isJsonObject(value)
        ? Object.entries(value).flatMap(([k, v]) => serialiseFormField(k, v, 'form', true))
        : [];
      return { kind: 'form', fields: pairs, text: new URLSearchParams(pairs).toString() };
    }
    case BodyKind.MULTIPART:
      return {
        kind: 'multipart',
        parts: isJsonObject(value)
          ? Object.entries(value).flatMap(([name, v]) =>
              multipartParts({ binding: { in: 'body', name }, value: v }),
            )
          : [],
      };
    default:
      return jsonBody(value);
  }
}

function jsonBody(value: unknown): RequestBody {
  return { kind: 'json', value, text: JSON.stringify(value) };
}

function multipartParts({ binding, value }: Placed): MultipartPart[] {
  const name = binding.name!;
  const values =
    Array.isArray(value) && (binding.file || value.every((item) => typeof item !== 'object'))
      ? value
      : [value];
  return values.map((item, index): MultipartPart => {
    if (binding.file) {
      const { bytes, mediaType } = decodeBinary(scalarText(item));
      const contentType = mediaType ?? binding.contentType ?? 'application/octet-stream';
      return { name, value: bytes, filename: values.length > 1 ? `${name}-${index + 1}` : name, contentType };
    }
    if (item !== null && typeof item === 'object')
      return { name, value: JSON.stringify(item), contentType: 'application/json' };
    return binding.contentType
      ? { name, value: scalarText(item), contentType: binding.contentType }
      : { name, value: scalarText(item) };
  });
}

/** Base64 text or a `data:` URL as bytes; text that is neither is taken as UTF-8 content. */
export function decodeBinary(text: string): { bytes: Uint8Array; mediaType: string | undefined } {
  const dataUrl = /^data:([^;,]*)(;[^,]*)?,(.*)$/s.exec(text);
  if (dataUrl) {
    const mediaType = dataUrl[1] || undefined;
    const payload = dataUrl[3] ?? '';
    if (dataUrl[2]?.includes(';base64')) return { bytes: base64Bytes(payload) ?? utf8(payload), mediaType };
    return { bytes: utf8(decodeURIComponent(payload)), mediaType };
  }
  return { bytes: base64Bytes(text) ?? utf8(text), mediaType: undefined };
}

function base64Bytes(text: string): Uint8Array | undefined {
  const compact = text.replace(/\s+/g, '').replaceAll('-', '+').replaceAll('_', '/');
  if (compact === '' || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) return undefined;
  try {
    const binary = atob(compact.padEnd(Math.ceil(compact.length / 4) * 4, '='));
    return Uint8Array.from(binary, (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** Parameters declared with `content` (e.g. JSON in a query parameter) are sent serialised. */
function encodeContent(value: unknown, binding: Placed['binding']): unknown {
  return binding.contentType !== undefined && typeof value !== 'string' ? JSON.stringify(value) : value;
}

/** Strict mode: `null` for an argument that was optional only means "not given". */
function pruneAbsentNulls(args: JsonObject, tree: NullAsAbsent | undefined): JsonObject {
  if (!tree) return args;
  return prune(args, tree, tree.defs ?? {}) as JsonObject;
}

function prune(value: unknown, at: NullAsAbsent, defs: Record<string, NullAsAbsent>): unknown {
  // A `$ref` position (recursive types) reads its tree from the root's `defs`.
  const tree = at.def !== undefined ? (defs[at.def] ?? {}) : at;
  if (Array.isArray(value)) return tree.items ? value.map((item) => prune(item, tree.items!, defs)) : value;
  if (!isJsonObject(value) || !tree.properties) return value;
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    const child = tree.properties[key];
    if (child?.absentIfNull && item === null) continue;
    out[key] = child ? prune(item, child, defs) : item;
  }
  return out;
}
