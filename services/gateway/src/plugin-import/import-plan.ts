/**
 * An OpenAPI document turned into the HTTP plugins an import would store, before anything is stored:
 * one canonical `HttpTool` per selected operation, whose `execution.request_template` (the converter's
 * request template) places every argument where the document says, whose `execution.url` is the server
 * base URL the template's path is appended to, and whose `auth` comes from the document's security
 * schemes, with the credential names the user has to fill. Operations that cannot become a plugin are
 * listed with the reason; only a document that cannot be read, or a server URL that cannot be called,
 * refuses the whole import.
 */
import {
  convertDocument,
  FunctionNameRegistry,
  isSwagger2,
  OpenApiError,
  parseDocumentText,
  summariseSecuritySchemes,
  swagger2ToOpenApi3,
  type DocumentConversion,
  type OperationConversion,
  type OperationFailure,
} from '@agentmesh/openapi';
import {
  describeZodError,
  HttpMethod,
  HttpTool,
  toFunctionName,
  ToolFormat,
  ToolType,
} from '@agentmesh/protocol';
import { InvalidRequest, Rejection } from '../errors.js';
import type { PluginImportRequest } from './import-request.js';
import { operationAuth } from './operation-auth.js';

export interface SkippedOperation {
  /** The operationId or `METHOD /path` (or the selector that matched nothing). */
  operation: string;
  reason: string;
}

export interface ImportWarning {
  operation: string;
  message: string;
}

export interface PluginImportPlan {
  tools: HttpTool[];
  skipped: SkippedOperation[];
  warnings: ImportWarning[];
  /** Every credential name the plugins read, in order of first use. */
  credentials: string[];
}

interface Candidate {
  /** operationId, else `METHOD /path`: the plugin's `origin.id`. */
  label: string;
  method: string;
  path: string;
  operationId: string | undefined;
  conversion?: OperationConversion;
  failure?: OperationFailure;
}

const METHOD_AND_PATH = /^([A-Za-z]+)\s+(\/\S*)$/;

export function planPluginImport(request: PluginImportRequest): PluginImportPlan | Rejection {
  const converted = convert(request.document);
  if (converted instanceof Rejection) return converted;
  const { document, conversion } = converted;

  const candidates = [
    ...conversion.operations.map((op) =>
      candidate(op.method ?? '', op.path ?? '', op.operationId, { conversion: op }),
    ),
    ...conversion.failures.map((f) => candidate(f.method, f.path, f.operationId, { failure: f })),
  ];
  if (candidates.length === 0)
    return new InvalidRequest('document: it declares no operations (`paths` is empty)');
  const { selected, skipped } = select(candidates, request.operations);

  const servers = serverUrls(selected, request.base_url);
  if (servers instanceof Rejection) return servers;

  const credentialPrefix = request.credential_prefix ?? request.name_prefix;
  const schemes = new Map(
    summariseSecuritySchemes(document, {
      ...(credentialPrefix ? { credentialPrefix: withSeparator(credentialPrefix) } : {}),
    }).map((scheme) => [scheme.name, scheme]),
  );
  const names = new FunctionNameRegistry();
  const tools: HttpTool[] = [];
  const warnings: ImportWarning[] = [];
  for (const chosen of selected) {
    const { label, conversion: op, failure } = chosen;
    if (failure || !op) {
      skipped.push({ operation: label, reason: `${failure?.reason}: ${failure?.message}` });
      continue;
    }
    const method = HttpMethod.safeParse(op.method);
    if (!method.success) {
      skipped.push({
        operation: label,
        reason: `method ${op.method} is not supported (${HttpMethod.options.join(', ')} are)`,
      });
      continue;
    }
    const { warning, ...auth } = operationAuth(op.security, schemes);
    if (warning) warnings.push({ operation: label, message: warning });
    const tool = HttpTool.safeParse({
      type: ToolType.HTTP,
      name: names.claim(toFunctionName(`${request.name_prefix ?? ''}${op.name}`)),
      description: op.description,
      parameters: op.parameters,
      origin: { format: ToolFormat.OPENAPI, id: label },
      execution: {
        method: method.data,
        url: servers.get(chosen) ?? '',
        request_template: {
          method: method.data,
          path: op.path ?? '',
          arguments: op.arguments,
          ...(op.body ? { body: op.body } : {}),
          ...(op.nullAsAbsent ? { nullAsAbsent: op.nullAsAbsent } : {}),
        },
      },
      ...auth,
    });
    if (tool.success) tools.push(tool.data);
    else
      skipped.push({
        operation: label,
        reason: `not a valid plugin: ${describeZodError(tool.error).message}`,
      });
  }
  const credentials = [...new Set(tools.flatMap((tool) => tool.required_credentials ?? []))];
  return { tools, skipped, warnings, credentials };
}

function candidate(
  method: string,
  path: string,
  operationId: string | undefined,
  outcome: Pick<Candidate, 'conversion' | 'failure'>,
): Candidate {
  return { label: operationId ?? `${method} ${path}`, method, path, operationId, ...outcome };
}

/** The document read and converted (Swagger 2.0 upgraded first), or why it cannot be. */
function convert(
  input: string | Record<string, unknown>,
): { document: unknown; conversion: DocumentConversion } | Rejection {
  try {
    const parsed = typeof input === 'string' ? parseDocumentText(input, 'document') : input;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return new InvalidRequest('document: the text is not an OpenAPI document (it parses to no object)');
    }
    const document = isSwagger2(parsed) ? swagger2ToOpenApi3(parsed).document : parsed;
    return { document, conversion: convertDocument(document) };
  } catch (error) {
    if (error instanceof OpenApiError) {
      return new InvalidRequest(
        error.message.startsWith('document') ? error.message : `document: ${error.message}`,
      );
    }
    throw error;
  }
}

/** The operations named by `selectors` (all when absent); a selector that names none is skipped. */
function select(
  candidates: Candidate[],
  selectors: string[] | undefined,
): { selected: Candidate[]; skipped: SkippedOperation[] } {
  if (selectors === undefined) return { selected: candidates, skipped: [] };
  const selected = new Set<Candidate>();
  const skipped: SkippedOperation[] = [];
  for (const selector of new Set(selectors)) {
    const byPath = METHOD_AND_PATH.exec(selector.trim());
    const found = candidates.find((c) =>
      byPath ? c.method === byPath[1]?.toUpperCase() && c.path === byPath[2] : c.operationId === selector,
    );
    if (found) selected.add(found);
    else
      skipped.push({
        operation: selector,
        reason: 'the document has no operation with this operationId or `METHOD /path`',
      });
  }
  return { selected: candidates.filter((c) => selected.has(c)), skipped };
}

/**
 * The base URL each operation is called at: `base_url` when given, else the operation's first server
 * (operation, path item or document level). A relative or missing one refuses the import, since no
 * plugin could be called.
 */
function serverUrls(selected: Candidate[], baseUrl: string | undefined): Map<Candidate, string> | Rejection {
  const urls = new Map<Candidate, string>();
  const problems = new Map<string, string[]>();
  for (const chosen of selected) {
    if (!chosen.conversion) continue;
    const server = baseUrl ?? chosen.conversion.servers[0];
    const problem = serverProblem(server);
    if (problem === undefined && server !== undefined) urls.set(chosen, server.replace(/\/+$/, ''));
    else if (problem !== undefined) problems.set(problem, [...(problems.get(problem) ?? []), chosen.label]);
  }
  const [first] = problems;
  if (first === undefined) return urls;
  const [problem, operations] = first;
  return new InvalidRequest(
    `${problem}: pass base_url, the absolute URL to call (e.g. https://api.example.com/v1)`,
    {
      operations: operations.slice(0, 20),
    },
  );
}

function serverProblem(server: string | undefined): string | undefined {
  if (server === undefined) return 'the document names no server URL';
  if (/\{[^}]*\}/.test(server)) return `the server URL "${server}" has a variable without a default`;
  try {
    const url = new URL(server);
    if (url.protocol === 'http:' || url.protocol === 'https:') return undefined;
    return `the server URL "${server}" is not http(s)`;
  } catch {
    return `the server URL "${server}" is relative`;
  }
}

/** `petstore` → `petstore_`, so the prefix and the scheme name stay apart in `PETSTORE_API_KEY`. */
function withSeparator(prefix: string): string {
  return /[_-]$/.test(prefix) ? prefix : `${prefix}_`;
}
