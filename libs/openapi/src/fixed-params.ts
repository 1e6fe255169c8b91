// Seed 004 §4.3: placing an action's already-known parameters (`actions[0].parameters`) by location.
// Precise mapping reads `api_spec.parameters` (name → `in`, unknown names default to `body`); when the
// spec cannot be read, names decide: `x-…`, `authorization` and `content-type` are headers, the rest body.

import type { FixedParams } from '@agentmesh/protocol';
import { asArray, asString, isJsonObject } from './json.js';
import { RefResolver } from './ref-resolver.js';

export function emptyFixedParams(): FixedParams {
  return { header: {}, path: {}, query: {}, body: {} };
}

/** The seed's `map_parameters_by_schema`, falling back to `mapParametersByNaming` for an unreadable spec. */
export function mapParametersBySchema(
  actionParameters: Record<string, unknown>,
  apiSpec: unknown,
): FixedParams {
  if (!isJsonObject(apiSpec) || (apiSpec.parameters !== undefined && !Array.isArray(apiSpec.parameters))) {
    return mapParametersByNaming(actionParameters);
  }
  const resolver = new RefResolver(apiSpec);
  const locations = new Map<string, string>();
  // Header names are case-insensitive (RFC 9110): `x-http-method-override` is the spec's `X-HTTP-Method-Override`.
  const headerNames = new Set<string>();
  for (const raw of asArray(apiSpec.parameters)) {
    const deref = resolver.deref(raw);
    const parameter = deref.ok && isJsonObject(deref.value) ? deref.value : undefined;
    const name = asString(parameter?.name);
    const location = asString(parameter?.in);
    if (name !== undefined && location !== undefined) locations.set(name, location);
    if (name !== undefined && location === 'header') headerNames.add(name.toLowerCase());
  }
  const fixed = emptyFixedParams();
  for (const [key, value] of Object.entries(actionParameters)) {
    const location = locations.get(key) ?? (headerNames.has(key.toLowerCase()) ? 'header' : undefined);
    if (location === 'header' || location === 'path' || location === 'query') fixed[location][key] = value;
    else if (location === 'cookie') (fixed.cookie ??= {})[key] = value;
    else fixed.body[key] = value;
  }
  return fixed;
}

/** The seed's fallback when the spec cannot be parsed. */
export function mapParametersByNaming(actionParameters: Record<string, unknown>): FixedParams {
  const fixed = emptyFixedParams();
  for (const [key, value] of Object.entries(actionParameters)) {
    const lower = key.toLowerCase();
    const isHeader = lower.startsWith('x-') || lower === 'authorization' || lower === 'content-type';
    (isHeader ? fixed.header : fixed.body)[key] = value;
  }
  return fixed;
}
