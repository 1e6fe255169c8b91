// Swagger 2.0 → OpenAPI 3.0, as far as this library reads documents: `body` parameters become a request
// body in each `consumes` media type, `formData` parameters a form (multipart when files are involved),
// `collectionFormat` a style/explode pair, `definitions` `components.schemas` (refs rewritten),
// `securityDefinitions` security schemes, `host` + `basePath` + `schemes` servers.

import { asArray, asNonEmptyString, asString, isJsonObject, type JsonObject } from './json.js';
import { NoteCode, type ConversionNote } from './notes.js';
import { RefResolver } from './ref-resolver.js';
import { walkReferences } from './ref-walker.js';

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'] as const;
const FORM_URLENCODED = 'application/x-www-form-urlencoded';
const MULTIPART = 'multipart/form-data';

// Parameter keywords that describe the value: in OpenAPI 3 they live in the parameter's `schema`.
const SCHEMA_KEYWORDS = [
  'type',
  'format',
  'items',
  'enum',
  'default',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'multipleOf',
  'x-nullable',
] as const;

export interface Swagger2Conversion {
  readonly document: JsonObject;
  readonly notes: ConversionNote[];
}

export function isSwagger2(document: unknown): document is JsonObject {
  return isJsonObject(document) && typeof document.swagger === 'string' && document.swagger.startsWith('2');
}

export function swagger2ToOpenApi3(input: JsonObject): Swagger2Conversion {
  // Refs are rewritten in place below: work on a copy, never on the caller's document.
  const swagger = structuredClone(input);
  const notes: ConversionNote[] = [];
  const resolver = new RefResolver(swagger);
  const globalConsumes = asArray(swagger.consumes).filter((t): t is string => typeof t === 'string');
  const globalProduces = asArray(swagger.produces).filter((t): t is string => typeof t === 'string');
  const paths: JsonObject = {};
  for (const [path, rawItem] of Object.entries(isJsonObject(swagger.paths) ? swagger.paths : {})) {
    const item = resolver.deref(rawItem);
    if (!item.ok || !isJsonObject(item.value)) continue;
    const pathItem = item.value;
    const converted: JsonObject = {};
    for (const method of HTTP_METHODS) {
      const operation = pathItem[method];
      if (!isJsonObject(operation)) continue;
      converted[method] = convertOperation(operation, pathItem.parameters, {
        resolver,
        consumes: stringList(operation.consumes) ?? globalConsumes,
        produces: stringList(operation.produces) ?? globalProduces,
        notes,
        where: `${method.toUpperCase()} ${path}`,
      });
    }
    paths[path] = converted;
  }
  const document: JsonObject = {
    openapi: '3.0.3',
    info: isJsonObject(swagger.info) ? swagger.info : { title: 'API', version: '0' },
    servers: servers(swagger),
    paths,
    components: {
      schemas: isJsonObject(swagger.definitions) ? swagger.definitions : {},
      responses: convertResponses(swagger.responses, globalProduces),
      securitySchemes: securitySchemes(swagger.securityDefinitions),
    },
  };
  if (Array.isArray(swagger.security)) document.security = swagger.security;
  if (Array.isArray(swagger.tags)) document.tags = swagger.tags;
  walkReferences(document, (holder) => {
    const ref = holder.$ref as string;
    if (ref.startsWith('#/definitions/'))
      holder.$ref = `#/components/schemas/${ref.slice('#/definitions/'.length)}`;
    else if (ref.startsWith('#/responses/'))
      holder.$ref = `#/components/responses/${ref.slice('#/responses/'.length)}`;
  });
  return { document, notes };
}

/**
 * Upgrades a Swagger-style operation object (parameters `in: body` / `in: formData`) found outside a
 * Swagger document, e.g. a tool box's `api_spec`.
 */
export function upgradeSwagger2Operation(operation: JsonObject, root: unknown): JsonObject {
  return convertOperation(operation, undefined, {
    resolver: new RefResolver(root),
    consumes: stringList(operation.consumes) ?? [],
    produces: [],
    notes: [],
    where: 'operation',
  });
}

export function hasSwagger2Parameters(operation: JsonObject, resolver: RefResolver): boolean {
  return asArray(operation.parameters).some((raw) => {
    const deref = resolver.deref(raw);
    return (
      deref.ok && isJsonObject(deref.value) && (deref.value.in === 'body' || deref.value.in === 'formData')
    );
  });
}

interface OperationContext {
  readonly resolver: RefResolver;
  readonly consumes: string[];
  readonly produces: string[];
  readonly notes: ConversionNote[];
  readonly where: string;
}

function convertOperation(operation: JsonObject, pathParameters: unknown, ctx: OperationContext): JsonObject {
  const merged = new Map<string, JsonObject>();
  for (const raw of [...asArray(pathParameters), ...asArray(operation.parameters)]) {
    const deref = ctx.resolver.deref(raw);
    if (!deref.ok || !isJsonObject(deref.value)) {
      ctx.notes.push({
        code: NoteCode.UNRESOLVED_REF,
        message: `${ctx.where}: a parameter could not be resolved`,
      });
      continue;
    }
    merged.set(`${String(deref.value.in)}\u0000${String(deref.value.name)}`, deref.value);
  }
  const parameters: JsonObject[] = [];
  let body: JsonObject | undefined;
  const formFields: JsonObject[] = [];
  for (const parameter of merged.values()) {
    if (parameter.in === 'body') body = parameter;
    else if (parameter.in === 'formData') formFields.push(parameter);
    else parameters.push(convertParameter(parameter, ctx));
  }
  const { parameters: _parameters, consumes: _consumes, produces: _produces, responses, ...rest } = operation;
  const converted: JsonObject = { ...rest, responses: convertResponses(responses, ctx.produces) };
  if (parameters.length > 0) converted.parameters = parameters;
  if (body) converted.requestBody = bodyRequest(body, ctx);
  else if (formFields.length > 0) converted.requestBody = formRequest(formFields, ctx);
  return converted;
}

function convertParameter(parameter: JsonObject, ctx: OperationContext): JsonObject {
  const schema: JsonObject = {};
  for (const key of SCHEMA_KEYWORDS) if (parameter[key] !== undefined) schema[key] = parameter[key];
  const out: JsonObject = { name: parameter.name, in: parameter.in, schema };
  for (const key of ['description', 'required', 'deprecated', 'allowEmptyValue'] as const) {
    if (parameter[key] !== undefined) out[key] = parameter[key];
  }
  if (parameter.type === 'array') Object.assign(out, collectionStyle(parameter, ctx));
  return out;
}

/** Swagger's `collectionFormat` as OpenAPI 3 `style` + `explode`. */
function collectionStyle(parameter: JsonObject, ctx: OperationContext): JsonObject {
  const format = asString(parameter.collectionFormat) ?? 'csv';
  const simpleLocation = parameter.in === 'path' || parameter.in === 'header';
  switch (format) {
    case 'multi':
      return { style: 'form', explode: true };
    case 'ssv':
      return { style: 'spaceDelimited', explode: false };
    case 'pipes':
      return { style: 'pipeDelimited', explode: false };
    case 'csv':
      return simpleLocation ? { style: 'simple', explode: false } : { style: 'form', explode: false };
    default:
      ctx.notes.push({
        code: NoteCode.INVALID_INPUT,
        message: `${ctx.where}: collectionFormat "${format}" of "${String(parameter.name)}" has no OpenAPI 3 style; comma-separated is used`,
      });
      return simpleLocation ? { style: 'simple', explode: false } : { style: 'form', explode: false };
  }
}

function bodyRequest(parameter: JsonObject, ctx: OperationContext): JsonObject {
  const types = ctx.consumes.length > 0 ? ctx.consumes : ['application/json'];
  const content = Object.fromEntries(types.map((type) => [type, { schema: parameter.schema ?? {} }]));
  const out: JsonObject = { content, required: parameter.required === true };
  if (parameter.description !== undefined) out.description = parameter.description;
  return out;
}

function formRequest(fields: readonly JsonObject[], ctx: OperationContext): JsonObject {
  const properties: JsonObject = {};
  const required: string[] = [];
  const encoding: JsonObject = {};
  for (const field of fields) {
    const name = asNonEmptyString(field.name);
    if (name === undefined) continue;
    const converted = convertParameter(field, ctx);
    const schema = isJsonObject(converted.schema) ? { ...converted.schema } : {};
    if (field.description !== undefined) schema.description = field.description;
    properties[name] = schema;
    if (field.required === true) required.push(name);
    if (converted.style !== undefined)
      encoding[name] = { style: converted.style, explode: converted.explode };
  }
  const hasFile = fields.some((field) => field.type === 'file');
  const offered = ctx.consumes.filter((type) => type === FORM_URLENCODED || type === MULTIPART);
  const types = hasFile ? [MULTIPART] : offered.length > 0 ? offered : [FORM_URLENCODED];
  const schema = { type: 'object', properties, ...(required.length > 0 ? { required } : {}) };
  const content = Object.fromEntries(
    types.map((type) => [type, { schema, ...(Object.keys(encoding).length > 0 ? { encoding } : {}) }]),
  );
  return { content, required: required.length > 0 };
}

function convertResponses(responses: unknown, produces: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const [status, response] of Object.entries(isJsonObject(responses) ? responses : {})) {
    if (!isJsonObject(response)) continue;
    if (typeof response.$ref === 'string') {
      out[status] = { $ref: response.$ref };
      continue;
    }
    const converted: JsonObject = { description: asString(response.description) ?? '' };
    if (response.schema !== undefined) {
      const types = produces.length > 0 ? produces : ['application/json'];
      converted.content = Object.fromEntries(types.map((type) => [type, { schema: response.schema }]));
    }
    out[status] = converted;
  }
  return out;
}

function servers(swagger: JsonObject): JsonObject[] {
  const basePath = asString(swagger.basePath) ?? '';
  const host = asString(swagger.host);
  if (host === undefined) return basePath ? [{ url: basePath }] : [];
  const schemes = stringList(swagger.schemes) ?? ['https'];
  return schemes.map((scheme) => ({ url: `${scheme}://${host}${basePath}` }));
}

function securitySchemes(definitions: unknown): JsonObject {
  const out: JsonObject = {};
  for (const [name, definition] of Object.entries(isJsonObject(definitions) ? definitions : {})) {
    if (!isJsonObject(definition)) continue;
    const description = definition.description !== undefined ? { description: definition.description } : {};
    if (definition.type === 'basic') out[name] = { type: 'http', scheme: 'basic', ...description };
    else if (definition.type === 'apiKey')
      out[name] = { type: 'apiKey', name: definition.name, in: definition.in, ...description };
    else if (definition.type === 'oauth2')
      out[name] = { type: 'oauth2', flows: oauthFlows(definition), ...description };
  }
  return out;
}

function oauthFlows(definition: JsonObject): JsonObject {
  const scopes = isJsonObject(definition.scopes) ? definition.scopes : {};
  const { authorizationUrl, tokenUrl } = definition;
  switch (definition.flow) {
    case 'implicit':
      return { implicit: { authorizationUrl, scopes } };
    case 'password':
      return { password: { tokenUrl, scopes } };
    case 'application':
      return { clientCredentials: { tokenUrl, scopes } };
    case 'accessCode':
      return { authorizationCode: { authorizationUrl, tokenUrl, scopes } };
    default:
      return {};
  }
}

function stringList(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.filter((item): item is string => typeof item === 'string');
}
