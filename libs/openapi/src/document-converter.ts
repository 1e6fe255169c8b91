// Entry points over whole documents (OpenAPI 3.0/3.1, or Swagger 2.0 converted first) and over seed
// 004's `api_spec` (one operation object carrying its own `components`). Operations are found through
// path-item and operation-level `$ref`s; one document shares one ref resolver and one memo of converted
// schemas, and hands out function names unique within it.

import type { OperationConversion } from './conversion.js';
import { InvalidDocumentError, OpenApiError, OperationNotFoundError } from './errors.js';
import { toFunctionName } from '@agentmesh/protocol';
import { FunctionNameRegistry, operationFunctionName } from './function-name.js';
import { asNonEmptyString, asString, isJsonObject, type JsonObject } from './json.js';
import { parseLocalPointer, pointerFromTokens } from './json-pointer.js';
import { NoteCode, type ConversionNote } from './notes.js';
import { resolveOptions, type ConversionOptions } from './options.js';
import {
  convertOperationSource,
  newConversionCaches,
  type ConverterContext,
  type OperationSource,
} from './operation-converter.js';
import { RefResolver } from './ref-resolver.js';
import { SchemaNormaliser } from './schema-normaliser.js';
import { summariseSecuritySchemes, type SecuritySchemeSummary } from './security-schemes.js';
import {
  hasSwagger2Parameters,
  isSwagger2,
  swagger2ToOpenApi3,
  upgradeSwagger2Operation,
} from './swagger2.js';

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface OperationSummary {
  /** Upper-case HTTP method. */
  readonly method: string;
  readonly path: string;
  readonly operationId: string | undefined;
  readonly summary: string | undefined;
  /** The function name the operation gets in this document. */
  readonly name: string;
}

/** Which operation of a document: by operationId, or by method + path template. */
export type OperationSelector =
  { readonly operationId: string } | { readonly method: string; readonly path: string };

export interface OperationFailure {
  readonly method: string;
  readonly path: string;
  readonly operationId: string | undefined;
  /** An error code, or `internal_error` for a bug in this library. */
  readonly reason: string;
  readonly message: string;
}

export interface DocumentConversion {
  readonly title: string | undefined;
  readonly version: string | undefined;
  readonly operations: OperationConversion[];
  readonly failures: OperationFailure[];
  readonly securitySchemes: SecuritySchemeSummary[];
  /** Notes about the document as a whole (e.g. from Swagger 2.0 conversion, unresolvable path items). */
  readonly notes: ConversionNote[];
}

interface LocatedOperation {
  readonly source: OperationSource;
  readonly name: string;
  readonly operationId: string | undefined;
  /** Set when the operation could not be read (e.g. its `$ref` points nowhere). */
  readonly problem: string | undefined;
}

interface PreparedDocument {
  readonly document: JsonObject;
  readonly resolver: RefResolver;
  readonly operations: LocatedOperation[];
  readonly notes: ConversionNote[];
}

/** Every operation of a document, with the function name each gets. */
export function listOperations(document: unknown): OperationSummary[] {
  return prepareDocument(document).operations.map(({ source, name, operationId }) => ({
    method: (source.method ?? '').toUpperCase(),
    path: source.path ?? '',
    operationId,
    summary: asString(source.operation.summary),
    name,
  }));
}

/** Converts every operation of a document; an operation that fails is listed, never fatal. */
export function convertDocument(document: unknown, options?: ConversionOptions): DocumentConversion {
  const prepared = prepareDocument(document);
  const ctx = converterContext(prepared.resolver, options);
  const operations: OperationConversion[] = [];
  const failures: OperationFailure[] = [];
  for (const located of prepared.operations) {
    try {
      operations.push(convertLocated(located, ctx));
    } catch (error) {
      failures.push({
        method: (located.source.method ?? '').toUpperCase(),
        path: located.source.path ?? '',
        operationId: located.operationId,
        reason: error instanceof OpenApiError ? error.code : 'internal_error',
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }
  const info = isJsonObject(prepared.document.info) ? prepared.document.info : {};
  return {
    title: asString(info.title),
    version: asString(info.version),
    operations,
    failures,
    securitySchemes: summariseSecuritySchemes(prepared.document),
    notes: prepared.notes,
  };
}

/** Converts one operation of a document, named as it would be by `convertDocument`. */
export function convertOperation(
  document: unknown,
  selector: OperationSelector,
  options?: ConversionOptions,
): OperationConversion {
  const prepared = prepareDocument(document);
  const located = prepared.operations.find((candidate) => matches(candidate, selector));
  if (!located) {
    throw new OperationNotFoundError(`no operation matches ${JSON.stringify(selector)}`, { selector });
  }
  return convertLocated(located, converterContext(prepared.resolver, options));
}

export interface ApiSpecOptions extends ConversionOptions {
  /** Function name to use (sanitised); defaults to the operationId, then method + path. */
  readonly name?: string;
  /** Which operation, when `apiSpec` is a whole document with several. */
  readonly operation?: OperationSelector;
}

/**
 * Converts seed 004's `api_spec`: an operation object (`parameters`, `request_body` or `requestBody`,
 * `components`, optionally `operationId`, `summary`, `method`, `path`), or a whole document.
 */
export function convertApiSpec(apiSpec: unknown, options: ApiSpecOptions = {}): OperationConversion {
  if (!isJsonObject(apiSpec)) throw new InvalidDocumentError('api_spec is not an object');
  const { name, operation: selector, ...conversionOptions } = options;
  if (isDocument(apiSpec)) {
    const prepared = prepareDocument(apiSpec);
    const located = selector
      ? prepared.operations.find((candidate) => matches(candidate, selector))
      : prepared.operations.length === 1
        ? prepared.operations[0]
        : undefined;
    if (!located) {
      throw new OperationNotFoundError(
        selector
          ? `no operation matches ${JSON.stringify(selector)}`
          : 'the document has several operations: name one',
        { operations: prepared.operations.length },
      );
    }
    const ctx = converterContext(prepared.resolver, conversionOptions);
    const conversion = convertLocated(located, ctx);
    return name === undefined ? conversion : { ...conversion, name: toFunctionName(name) };
  }
  const resolver = new RefResolver(apiSpec);
  let operation: JsonObject = { ...apiSpec };
  if (operation.requestBody === undefined && operation.request_body !== undefined)
    operation.requestBody = operation.request_body;
  if (hasSwagger2Parameters(operation, resolver)) operation = upgradeSwagger2Operation(operation, apiSpec);
  const method = asNonEmptyString(apiSpec.method)?.toLowerCase();
  const path = asNonEmptyString(apiSpec.path);
  const operationId = asNonEmptyString(apiSpec.operationId);
  const functionName =
    name !== undefined
      ? toFunctionName(name)
      : operationId !== undefined || (method && path)
        ? operationFunctionName(operationId, method ?? '', path ?? '')
        : 'operation';
  const source: OperationSource = {
    method,
    path,
    operation,
    pathParameters: undefined,
    pointer: undefined,
    pathItemPointer: undefined,
    servers: [],
    defaultSecurity: undefined,
  };
  return convertOperationSource(source, functionName, converterContext(resolver, conversionOptions));
}

function isDocument(value: JsonObject): boolean {
  return typeof value.openapi === 'string' || typeof value.swagger === 'string' || isJsonObject(value.paths);
}

function converterContext(resolver: RefResolver, options: ConversionOptions | undefined): ConverterContext {
  const resolved = resolveOptions(options);
  return {
    resolver,
    options: resolved,
    normaliser: new SchemaNormaliser(resolver, resolved),
    caches: newConversionCaches(resolved.minSharedSchemaLength),
  };
}

function convertLocated(located: LocatedOperation, ctx: ConverterContext): OperationConversion {
  if (located.problem !== undefined) {
    throw new InvalidDocumentError(located.problem, {
      path: located.source.path,
      method: located.source.method,
    });
  }
  const conversion = convertOperationSource(located.source, located.name, ctx);
  if (located.operationId !== undefined && located.name !== located.operationId) {
    const note: ConversionNote = {
      code: NoteCode.NAME_ADJUSTED,
      message: `operationId "${located.operationId}" is exposed as "${located.name}"`,
    };
    return { ...conversion, notes: [note, ...conversion.notes] };
  }
  return conversion;
}

function matches(located: LocatedOperation, selector: OperationSelector): boolean {
  if ('operationId' in selector) return located.operationId === selector.operationId;
  return located.source.method === selector.method.toLowerCase() && located.source.path === selector.path;
}

function prepareDocument(input: unknown): PreparedDocument {
  if (!isJsonObject(input)) throw new InvalidDocumentError('the document is not an object');
  const notes: ConversionNote[] = [];
  let document = input;
  if (isSwagger2(input)) {
    const converted = swagger2ToOpenApi3(input);
    document = converted.document;
    notes.push(...converted.notes);
  } else if (!isDocument(input)) {
    throw new InvalidDocumentError('not an OpenAPI document: no `openapi`, `swagger` or `paths`');
  }
  const resolver = new RefResolver(document);
  const registry = new FunctionNameRegistry();
  const operations: LocatedOperation[] = [];
  const documentServers = serverUrls(document.servers);
  for (const [path, rawItem] of Object.entries(isJsonObject(document.paths) ? document.paths : {})) {
    const itemPointer = pointerFromTokens(['paths', path]);
    const item = resolver.deref(rawItem);
    if (!item.ok || !isJsonObject(item.value)) {
      notes.push({
        code: NoteCode.UNRESOLVED_REF,
        message: `path item ${path} could not be read`,
        source: itemPointer,
      });
      continue;
    }
    const pathItem = item.value;
    const pathItemPointer = item.pointer ?? itemPointer;
    const itemServers = serverUrls(pathItem.servers);
    for (const method of HTTP_METHODS) {
      if (pathItem[method] === undefined) continue;
      const op = resolver.deref(pathItem[method]);
      const operation = op.ok && isJsonObject(op.value) ? op.value : {};
      const operationId = asNonEmptyString(operation.operationId);
      operations.push({
        source: {
          method,
          path,
          operation,
          pathParameters: pathItem.parameters,
          pointer:
            (op.ok ? op.pointer : undefined) ??
            pointerFromTokens([...(parseLocalPointer(pathItemPointer) ?? []), method]),
          pathItemPointer,
          servers: firstNonEmpty(serverUrls(operation.servers), itemServers, documentServers),
          defaultSecurity: document.security,
        },
        name: registry.claim(operationFunctionName(operationId, method, path)),
        operationId,
        problem: op.ok
          ? isJsonObject(op.value)
            ? undefined
            : `${method.toUpperCase()} ${path} is not an object`
          : op.reason,
      });
    }
  }
  return { document, resolver, operations, notes };
}

/** Server URLs with `{variables}` replaced by their defaults. */
function serverUrls(servers: unknown): string[] {
  if (!Array.isArray(servers)) return [];
  return servers.filter(isJsonObject).flatMap((server) => {
    const url = asString(server.url);
    if (url === undefined) return [];
    const variables = isJsonObject(server.variables) ? server.variables : {};
    return [
      url.replace(/\{([^}]+)\}/g, (whole, name: string) => {
        const variable = variables[name];
        return isJsonObject(variable) && typeof variable.default === 'string' ? variable.default : whole;
      }),
    ];
  });
}

function firstNonEmpty(...lists: string[][]): string[] {
  return lists.find((list) => list.length > 0) ?? [];
}
