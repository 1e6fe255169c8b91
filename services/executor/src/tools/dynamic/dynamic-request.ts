// Seed 004 §10 Q6: how a dynamic tool's call becomes the request to the tool box proxy. The model's
// arguments are placed by `original_schema` (its OpenAPI conversion, or the seed's naming rule when it does
// not convert), merged with `fixed_params` (the model's values win), and sent as one POST to `api_url`:
// path values fill `{name}` placeholders of `api_url` (and go to its query when it has none for them), query
// values go to its query string, headers (X-HTTP-Method-Override included) are sent along, and the body
// arguments form a JSON body. The proxy executes the tool itself.
//
// The account headers are the task's business, not the model's: they come from `fixed_params` (recall sets
// them), else from the task's account; an argument of that name is left out.
import {
  mapParametersByNaming,
  ParameterLocation,
  type ArgumentBinding,
  type RequestParts,
  type RequestTemplate,
} from '@agentmesh/openapi';
import type { DynamicToolDefinition, FixedParams } from '@agentmesh/protocol';
import type { HttpRequestPlan } from '../http/request-plan.js';
import { joinUrl, planFromRequestParts, requestPartsFor } from '../http/request-parts-plan.js';
import { ToolDefinitionError } from '../tool-errors.js';
import { placeholderNames } from '../http/url-template.js';

/** The task's account, carried to the proxy as `x-account-id` / `x-account-type`. */
export interface TaskAccount {
  readonly id: string;
  readonly type?: string;
}

const ACCOUNT_ID_HEADER = 'x-account-id';
const ACCOUNT_TYPE_HEADER = 'x-account-type';
const ACCOUNT_HEADERS = new Set([ACCOUNT_ID_HEADER, ACCOUNT_TYPE_HEADER]);

/** Everything the model's arguments are placed into goes through the lib as JSON: the proxy reads JSON. */
const JSON_BODY = { contentType: 'application/json', kind: 'json', required: false } as const;

/**
 * @param schemaTemplate the conversion of the tool's `original_schema`, or undefined when it does not
 *   convert (then the seed's naming rule places the arguments).
 */
export function buildDynamicRequest(
  tool: DynamicToolDefinition,
  schemaTemplate: RequestTemplate | undefined,
  args: Readonly<Record<string, unknown>>,
  account: TaskAccount,
): HttpRequestPlan {
  const { base, path } = splitApiUrl(tool.api_url);
  const inPath = new Set(placeholderNames(path));
  const modelArgs = withoutAccountArguments(args, schemaTemplate);
  const template = proxyTemplate(schemaTemplate, modelArgs, path, inPath);
  const fixedParams = proxyFixedParams(tool.fixed_params, inPath, account);
  const parts = withJsonBody(requestPartsFor(template, modelArgs, { fixedParams }));
  return planFromRequestParts('POST', joinUrl(base, parts.path, parts.queryString), parts);
}

function splitApiUrl(apiUrl: string): { base: string; path: string } {
  const match = /^(https?:\/\/[^/?#]+)([^?#]*)(\?[^#]*)?/i.exec(apiUrl);
  if (match === null) throw new ToolDefinitionError(`the dynamic tool's api_url is not an http(s) URL`);
  return { base: `${match[1] ?? ''}${match[3] ?? ''}`, path: match[2] ?? '' };
}

function proxyTemplate(
  schema: RequestTemplate | undefined,
  args: Readonly<Record<string, unknown>>,
  path: string,
  inPath: ReadonlySet<string>,
): RequestTemplate {
  const bindings = schema === undefined ? bindingsByNaming(args, inPath) : [...schema.arguments];
  // Seed 004 §4.3: a name the schema does not know goes to the body.
  const known = new Set(bindings.map((binding) => binding.property));
  for (const name of Object.keys(args)) if (!known.has(name)) bindings.push(bodyBinding(name));
  return {
    method: 'POST',
    path,
    arguments: bindings.map((binding) => pathOrQuery(binding, inPath)),
    body: { ...JSON_BODY, whole: schema?.body?.whole ?? false },
    nullAsAbsent: schema?.nullAsAbsent,
  };
}

/** The seed's fallback for the model's arguments: `x-…`/authorization/content-type are headers, the rest body. */
function bindingsByNaming(
  args: Readonly<Record<string, unknown>>,
  inPath: ReadonlySet<string>,
): ArgumentBinding[] {
  const byName = mapParametersByNaming(Object.fromEntries(Object.keys(args).map((name) => [name, true])));
  return Object.keys(args).map((name): ArgumentBinding => {
    if (inPath.has(name)) return { property: name, in: ParameterLocation.PATH, name, required: true };
    if (name in byName.header) return { property: name, in: ParameterLocation.HEADER, name, required: false };
    return bodyBinding(name);
  });
}

function bodyBinding(name: string): ArgumentBinding {
  return { property: name, in: ParameterLocation.BODY, name, required: false };
}

/** A path parameter `api_url` has no placeholder for would be lost: it goes to the query instead. */
function pathOrQuery(binding: ArgumentBinding, inPath: ReadonlySet<string>): ArgumentBinding {
  if (binding.in !== ParameterLocation.PATH || inPath.has(binding.name ?? binding.property)) return binding;
  return { ...binding, in: ParameterLocation.QUERY, style: 'form', explode: true };
}

function proxyFixedParams(
  fixed: DynamicToolDefinition['fixed_params'],
  inPath: ReadonlySet<string>,
  account: TaskAccount,
): FixedParams {
  const path: Record<string, unknown> = {};
  const query: Record<string, unknown> = { ...fixed.query };
  for (const [name, value] of Object.entries(fixed.path)) (inPath.has(name) ? path : query)[name] = value;
  const header: Record<string, unknown> = { ...fixed.header };
  const hasHeader = (wanted: string) => Object.keys(header).some((name) => name.toLowerCase() === wanted);
  if (!hasHeader(ACCOUNT_ID_HEADER)) header[ACCOUNT_ID_HEADER] = account.id;
  if (!hasHeader(ACCOUNT_TYPE_HEADER) && account.type !== undefined)
    header[ACCOUNT_TYPE_HEADER] = account.type;
  return {
    header,
    path,
    query,
    body: { ...fixed.body },
    ...(fixed.cookie === undefined ? {} : { cookie: { ...fixed.cookie } }),
  };
}

/** The model's arguments minus any that would set an account header. */
function withoutAccountArguments(
  args: Readonly<Record<string, unknown>>,
  schema: RequestTemplate | undefined,
): Readonly<Record<string, unknown>> {
  const headerNameOf = (property: string): string | undefined => {
    const binding = schema?.arguments.find((candidate) => candidate.property === property);
    if (binding === undefined) return property;
    return binding.in === ParameterLocation.HEADER ? binding.name : undefined;
  };
  return Object.fromEntries(
    Object.entries(args).filter(
      ([property]) => !ACCOUNT_HEADERS.has(headerNameOf(property)?.toLowerCase() ?? ''),
    ),
  );
}

/** The proxy always gets a JSON body, `{}` when nothing was placed there. */
function withJsonBody(parts: RequestParts): RequestParts {
  if (parts.body !== undefined) return parts;
  return { ...parts, body: { kind: 'json', value: {}, text: '{}' }, contentType: 'application/json' };
}
