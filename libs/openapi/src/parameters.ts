// Reads an operation's parameters: `$ref`s resolved, path-item parameters merged with the operation's
// (the operation's win, matched by name + location), defaults of style/explode filled in as OpenAPI
// defines them, and the parameters OpenAPI says to ignore left out with a note.

import { asNonEmptyString, asString, isJsonObject, type JsonObject } from './json.js';
import { NoteCode, type NoteCollector } from './notes.js';
import type { RefResolver } from './ref-resolver.js';
import { pickMediaType } from './media-types.js';

export const PARAMETER_LOCATIONS = ['path', 'query', 'header', 'cookie'] as const;
export type ParameterIn = (typeof PARAMETER_LOCATIONS)[number];

export interface ResolvedParameter {
  readonly name: string;
  readonly in: ParameterIn;
  readonly required: boolean;
  readonly description: string | undefined;
  readonly deprecated: boolean;
  /** The raw Schema Object (possibly a `$ref`), undefined when the parameter declares none. */
  readonly schema: unknown;
  /** Set when the parameter is given with `content` instead of `schema`. */
  readonly contentType: string | undefined;
  readonly style: string;
  readonly explode: boolean;
  readonly allowReserved: boolean;
  readonly example: unknown;
}

// "If `in` is header and the name is Accept, Content-Type or Authorization, the parameter definition
// SHALL be ignored" (OpenAPI 3.x): the client sets those itself.
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);

const DEFAULT_STYLE: Record<ParameterIn, string> = {
  path: 'simple',
  query: 'form',
  header: 'simple',
  cookie: 'form',
};

export interface ParameterLists {
  readonly pathLevel: unknown;
  readonly operationLevel: unknown;
  /** Pointers of the path item and the operation, for notes. */
  readonly pathItemSource: string | undefined;
  readonly operationSource: string | undefined;
}

export function collectParameters(
  lists: ParameterLists,
  resolver: RefResolver,
  notes: NoteCollector,
): ResolvedParameter[] {
  const byKey = new Map<string, ResolvedParameter>();
  const read = (list: unknown, listSource: string | undefined): void => {
    if (list === undefined) return;
    if (!Array.isArray(list)) {
      notes.add(NoteCode.INVALID_INPUT, '`parameters` is not a list and was ignored', listSource);
      return;
    }
    list.forEach((raw, index) => {
      const parameter = readParameter(raw, resolver, notes, listSource && `${listSource}/${index}`);
      if (parameter) byKey.set(`${parameter.in}\u0000${parameter.name}`, parameter);
    });
  };
  read(lists.pathLevel, lists.pathItemSource && `${lists.pathItemSource}/parameters`);
  read(lists.operationLevel, lists.operationSource && `${lists.operationSource}/parameters`);
  return [...byKey.values()];
}

function readParameter(
  raw: unknown,
  resolver: RefResolver,
  notes: NoteCollector,
  source: string | undefined,
): ResolvedParameter | undefined {
  const deref = resolver.deref(raw);
  if (!deref.ok) {
    notes.add(NoteCode.UNRESOLVED_REF, `parameter ${deref.ref}: ${deref.reason}`, source);
    return undefined;
  }
  const parameter = deref.value;
  const where = deref.pointer ?? source;
  if (!isJsonObject(parameter)) {
    notes.add(NoteCode.INVALID_INPUT, 'a parameter is not an object and was ignored', where);
    return undefined;
  }
  const name = asNonEmptyString(parameter.name);
  const location = asString(parameter.in);
  if (name === undefined || !PARAMETER_LOCATIONS.includes(location as ParameterIn)) {
    notes.add(
      NoteCode.PARAMETER_IGNORED,
      `parameter ${JSON.stringify(name ?? null)} in ${JSON.stringify(location ?? null)} is not a path, query, header or cookie parameter and was ignored`,
      where,
    );
    return undefined;
  }
  const parameterIn = location as ParameterIn;
  if (parameterIn === 'header' && IGNORED_HEADERS.has(name.toLowerCase())) {
    notes.add(
      NoteCode.PARAMETER_IGNORED,
      `header parameter "${name}" is set by the HTTP client and was ignored`,
      where,
    );
    return undefined;
  }
  const { schema, contentType } = parameterSchema(parameter);
  const style = asNonEmptyString(parameter.style) ?? DEFAULT_STYLE[parameterIn];
  return {
    name,
    in: parameterIn,
    required: parameterIn === 'path' || parameter.required === true,
    description: asString(parameter.description),
    deprecated: parameter.deprecated === true,
    schema,
    contentType,
    style,
    explode: typeof parameter.explode === 'boolean' ? parameter.explode : style === 'form',
    allowReserved: parameter.allowReserved === true,
    example: parameter.example,
  };
}

function parameterSchema(parameter: JsonObject): { schema: unknown; contentType: string | undefined } {
  if (parameter.schema !== undefined) return { schema: parameter.schema, contentType: undefined };
  if (isJsonObject(parameter.content)) {
    const picked = pickMediaType(Object.keys(parameter.content));
    const media = picked === undefined ? undefined : parameter.content[picked];
    if (picked !== undefined && isJsonObject(media)) return { schema: media.schema, contentType: picked };
  }
  return { schema: undefined, contentType: undefined };
}
