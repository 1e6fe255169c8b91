// Converts ONE operation into a function: every parameter (path, query, header, cookie) and the body's
// properties flattened into one `properties` object with one merged `required`, plus the bindings that
// say where each argument goes. Name clashes across locations are resolved by a fixed rule, documented
// on `PropertyNamer`, and reported.

import {
  BodyKind,
  ParameterLocation,
  type ArgumentBinding,
  type BodyBinding,
  type OperationConversion,
} from './conversion.js';
import { finaliseSchema } from './finalise.js';
import { fitFunctionBudget, measuredFunctionBytes } from './function-budget.js';
import { asArray, asString, isJsonObject, isPrimitive, type JsonObject } from './json.js';
import { isObjectSchema, type FunctionParameters, type JsonSchema } from './json-schema.js';
import { isFileMediaType } from './media-types.js';
import { NoteCode, NoteCollector } from './notes.js';
import { BodyMode, ExampleMode, RefMode, type ResolvedOptions } from './options.js';
import { collectParameters, type ResolvedParameter } from './parameters.js';
import type { RefResolver } from './ref-resolver.js';
import { selectRequestBody, type SelectedBody } from './request-body.js';
import type { NormaliseSession, SchemaNormaliser } from './schema-normaliser.js';
import { SchemaMeasures, shareRepeatedSchemas, withoutUnusedDefs } from './shared-schemas.js';
import { toStrictParameters } from './strict-mode.js';
import { boundText, joinSentences } from './text.js';

/** One operation and where it sits in its document. */
export interface OperationSource {
  /** Lower-case HTTP method, when known. */
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly operation: JsonObject;
  /** Path-item level parameters (merged under the operation's own). */
  readonly pathParameters: unknown;
  readonly pointer: string | undefined;
  readonly pathItemPointer: string | undefined;
  readonly servers: string[];
  /** The document's default security requirements. */
  readonly defaultSecurity: unknown;
}

export interface ConverterContext {
  readonly resolver: RefResolver;
  readonly normaliser: SchemaNormaliser;
  readonly options: ResolvedOptions;
  /** Per-document caches by schema identity (finalised copies, measures), so shared parts cost once. */
  readonly caches?: ConversionCaches;
}

export interface ConversionCaches {
  readonly finalised: WeakMap<JsonSchema, JsonSchema>;
  readonly measures: SchemaMeasures;
}

export function newConversionCaches(minSharedSchemaLength: number): ConversionCaches {
  return { finalised: new WeakMap(), measures: new SchemaMeasures(minSharedSchemaLength) };
}

interface Argument {
  readonly binding: Omit<ArgumentBinding, 'property'>;
  readonly schema: JsonSchema;
}

const LOCATION_ORDER: readonly ParameterLocation[] = ['path', 'query', 'header', 'cookie', 'body'];

export function convertOperationSource(
  source: OperationSource,
  name: string,
  ctx: ConverterContext,
): OperationConversion {
  const notes = new NoteCollector();
  const session: NormaliseSession = { notes, source: source.pointer, nodes: 0, defs: new Map() };
  const parameters = collectParameters(
    {
      pathLevel: source.pathParameters,
      operationLevel: source.operation.parameters,
      pathItemSource: source.pathItemPointer,
      operationSource: source.pointer,
    },
    ctx.resolver,
    notes,
  );
  const args = parameters.map((parameter) => parameterArgument(parameter, ctx, session));
  const selected = selectRequestBody(
    source.operation.requestBody,
    ctx.resolver,
    notes,
    source.pointer && `${source.pointer}/requestBody`,
  );
  const body = selected ? bodyArguments(selected, ctx, session) : undefined;
  if (body) args.push(...body.args);

  const caches = ctx.caches ?? newConversionCaches(ctx.options.minSharedSchemaLength);
  const carry = (from: JsonSchema, to: JsonSchema): void => ctx.normaliser.carryOrigin(from, to);
  const finalise = (schema: JsonSchema): JsonSchema => finaliseSchema(schema, carry, caches.finalised);
  const { properties, required, bindings } = assembleArguments(args, notes, finalise);
  let functionParameters: FunctionParameters = { type: 'object', properties, required };
  if (session.defs.size > 0) {
    const defs = [...session.defs].map(([defName, schema]) => [defName, finalise(schema)]);
    functionParameters.$defs = Object.fromEntries(defs) as Record<string, JsonSchema>;
  }
  let nullAsAbsent;
  if (ctx.options.strict) {
    const strict = toStrictParameters(functionParameters, notes);
    functionParameters = strict.parameters;
    nullAsAbsent = strict.nullAsAbsent;
  }
  if (ctx.options.refs === RefMode.DEFS) {
    functionParameters = shareRepeatedSchemas(
      functionParameters,
      ctx.options.minSharedSchemaLength,
      (schema) => ctx.normaliser.componentName(schema),
      caches.measures,
    );
    functionParameters = withoutUnusedDefs(functionParameters);
  }
  let description = operationDescription(source, ctx.options, notes);
  // Most functions are far under the budget: an upper bound (3 bytes a character at most, from the
  // cached measures) saves serialising them.
  let roughChars = 256 + JSON.stringify(name).length + JSON.stringify(description).length;
  roughChars += JSON.stringify(functionParameters.required).length;
  for (const [key, schema] of [
    ...Object.entries(functionParameters.properties),
    ...Object.entries(functionParameters.$defs ?? {}),
  ]) {
    roughChars += JSON.stringify(key).length + 2 + caches.measures.length(schema);
  }
  const budgeted =
    roughChars * 3 <= ctx.options.maxFunctionBytes
      ? { note: undefined, parameters: functionParameters, description }
      : fitFunctionBudget(
          { name, description, parameters: functionParameters },
          ctx.options.maxFunctionBytes,
          measuredFunctionBytes(caches.measures),
        );
  if (budgeted.note !== undefined) {
    notes.add(NoteCode.SIZE_BUDGET, budgeted.note, source.pointer);
    functionParameters = budgeted.parameters;
    description = budgeted.description;
  }
  return {
    name,
    description,
    parameters: functionParameters,
    strict: ctx.options.strict,
    method: source.method?.toUpperCase(),
    path: source.path,
    operationId: asString(source.operation.operationId),
    servers: source.servers,
    arguments: bindings,
    body: body?.binding,
    security: readSecurity(source.operation.security ?? source.defaultSecurity),
    nullAsAbsent,
    notes: notes.list(),
  };
}

function parameterArgument(
  parameter: ResolvedParameter,
  ctx: ConverterContext,
  session: NormaliseSession,
): Argument {
  const raw = parameter.schema ?? { type: 'string' };
  let schema = ctx.normaliser.normalise(raw, session, 1);
  const description = joinSentences(parameter.deprecated ? 'Deprecated.' : undefined, parameter.description);
  if (description !== undefined) {
    const bounded = boundText(description, ctx.options.maxDescriptionLength);
    if (bounded.truncated) {
      session.notes.add(
        NoteCode.DESCRIPTION_TRUNCATED,
        `the description of parameter "${parameter.name}" was cut`,
      );
    }
    schema = { ...schema, description: bounded.text };
  }
  if (keepsExample(parameter.example, ctx.options) && schema.examples === undefined) {
    schema = { ...schema, examples: [parameter.example] };
  }
  return {
    schema,
    binding: {
      in: parameter.in,
      name: parameter.name,
      required: parameter.required,
      style: parameter.style,
      explode: parameter.explode,
      ...(parameter.allowReserved ? { allowReserved: true } : {}),
      ...(parameter.contentType ? { contentType: parameter.contentType } : {}),
    },
  };
}

function keepsExample(example: unknown, options: ResolvedOptions): boolean {
  if (example === undefined || options.examples === ExampleMode.NONE) return false;
  return options.examples === ExampleMode.ALL || isPrimitive(example);
}

function bodyArguments(
  body: SelectedBody,
  ctx: ConverterContext,
  session: NormaliseSession,
): { args: Argument[]; binding: BodyBinding } {
  const structured =
    body.kind === BodyKind.JSON || body.kind === BodyKind.FORM || body.kind === BodyKind.MULTIPART;
  if (structured && body.schema !== undefined && ctx.options.bodyMode === BodyMode.FLATTEN) {
    const schema = ctx.normaliser.normalise(body.schema, session, 0);
    if (isObjectSchema(schema) && schema.properties && !schema.anyOf) {
      if (typeof schema.additionalProperties === 'object') {
        session.notes.add(
          NoteCode.KEYWORD_DROPPED,
          'body properties beyond the declared ones cannot be passed',
        );
      }
      const required = new Set(schema.required ?? []);
      const args = Object.entries(schema.properties).map(([name, property]) =>
        bodyPropertyArgument(name, property, required.has(name), body),
      );
      return {
        args,
        binding: { contentType: body.contentType, kind: body.kind, required: body.required, whole: false },
      };
    }
    return wholeBody(body, schema, ctx);
  }
  const schema =
    structured && body.schema !== undefined ? ctx.normaliser.normalise(body.schema, session, 1) : {};
  return wholeBody(body, schema, ctx);
}

function bodyPropertyArgument(
  name: string,
  property: JsonSchema,
  required: boolean,
  body: SelectedBody,
): Argument {
  const encoding = isJsonObject(body.encoding[name]) ? body.encoding[name] : {};
  const partType = asString(encoding.contentType);
  let schema = property;
  let file = isFileSchema(property);
  if (body.kind === BodyKind.MULTIPART && !file && partType !== undefined && isFileMediaType(partType)) {
    file = true;
    schema = {
      ...property,
      type: 'string',
      contentEncoding: 'base64',
      contentMediaType: partType,
      description: joinSentences(
        property.description,
        'File content, base64-encoded (a data: URL is also accepted).',
      ),
    };
  }
  const style = asString(encoding.style) ?? (body.kind === BodyKind.JSON ? undefined : 'form');
  const binding: Omit<ArgumentBinding, 'property'> = {
    in: ParameterLocation.BODY,
    name,
    required,
    ...(style !== undefined
      ? { style, explode: typeof encoding.explode === 'boolean' ? encoding.explode : style === 'form' }
      : {}),
    ...(partType !== undefined ? { contentType: partType } : {}),
    ...(body.kind === BodyKind.MULTIPART && file ? { file: true } : {}),
  };
  return { schema, binding };
}

function isFileSchema(schema: JsonSchema): boolean {
  const target = schema.items ?? schema;
  return target.contentMediaType !== undefined && target.contentEncoding === 'base64';
}

function wholeBody(
  body: SelectedBody,
  converted: JsonSchema,
  ctx: ConverterContext,
): { args: Argument[]; binding: BodyBinding } {
  let schema: JsonSchema;
  if (body.kind === BodyKind.BINARY) {
    schema = {
      type: 'string',
      contentEncoding: 'base64',
      contentMediaType: body.contentType,
      description: `Request body (${body.contentType}), base64-encoded (a data: URL is also accepted).`,
    };
  } else if (body.kind === BodyKind.TEXT) {
    schema = { type: 'string', description: `Request body as ${body.contentType} text.` };
  } else {
    schema = converted;
  }
  const description = joinSentences(body.description, schema.description);
  if (description !== undefined) {
    schema = { ...schema, description: boundText(description, ctx.options.maxDescriptionLength).text };
  }
  return {
    args: [{ schema, binding: { in: ParameterLocation.BODY, required: body.required } }],
    binding: { contentType: body.contentType, kind: body.kind, required: body.required, whole: true },
  };
}

/**
 * Gives every argument a property name. Rule: locations claim names in the order path, query, header,
 * cookie, body; an argument whose name is already taken is prefixed with its location (`body_id`,
 * `query_id`), then numbered (`body_id_2`) if that is taken too. A whole body is called `body`
 * (`request_body` if a parameter is called `body`). Each rename is reported as a note.
 */
class PropertyNamer {
  /** Property name → what claimed it, for notes. */
  private readonly owners = new Map<string, string>();

  constructor(private readonly notes: NoteCollector) {}

  claim(arg: Argument): string {
    const { in: location, name } = arg.binding;
    const wanted = name ?? 'body';
    let property = wanted;
    if (this.owners.has(wanted)) {
      const prefixed = name === undefined ? 'request_body' : `${location}_${wanted}`;
      property = prefixed;
      for (let n = 2; this.owners.has(property); n++) property = `${prefixed}_${n}`;
      this.notes.add(
        NoteCode.NAME_COLLISION,
        `${describeArgument(arg)} is exposed as "${property}" because "${wanted}" is taken by ${this.owners.get(wanted)}`,
      );
    }
    this.owners.set(property, describeArgument(arg));
    return property;
  }
}

function describeArgument({ binding }: Argument): string {
  if (binding.name === undefined) return 'the request body';
  return `${binding.in} ${binding.in === 'body' ? 'property' : 'parameter'} "${binding.name}"`;
}

function assembleArguments(
  args: readonly Argument[],
  notes: NoteCollector,
  finalise: (schema: JsonSchema) => JsonSchema,
): { properties: Record<string, JsonSchema>; required: string[]; bindings: ArgumentBinding[] } {
  const ordered = [...args].sort(
    (a, b) => LOCATION_ORDER.indexOf(a.binding.in) - LOCATION_ORDER.indexOf(b.binding.in),
  );
  const namer = new PropertyNamer(notes);
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const bindings: ArgumentBinding[] = [];
  for (const arg of ordered) {
    const property = namer.claim(arg);
    properties[property] = finalise(arg.schema);
    if (arg.binding.required) required.push(property);
    bindings.push({ property, ...arg.binding });
  }
  return { properties, required, bindings };
}

function operationDescription(
  source: OperationSource,
  options: ResolvedOptions,
  notes: NoteCollector,
): string {
  const summary = asString(source.operation.summary)?.trim();
  const description = asString(source.operation.description)?.trim();
  let text: string;
  if (summary && description)
    text = description.startsWith(summary) ? description : `${summary}\n\n${description}`;
  else text = description || summary || [source.method?.toUpperCase(), source.path].filter(Boolean).join(' ');
  if (source.operation.deprecated === true) text = `Deprecated. ${text}`.trim();
  const bounded = boundText(text, options.maxDescriptionLength);
  if (bounded.truncated) {
    notes.add(
      NoteCode.DESCRIPTION_TRUNCATED,
      `the operation description was cut to ${options.maxDescriptionLength} characters`,
    );
  }
  return bounded.text;
}

function readSecurity(raw: unknown): Array<Record<string, string[]>> | undefined {
  if (!Array.isArray(raw)) return undefined;
  return raw
    .filter(isJsonObject)
    .map((requirement) =>
      Object.fromEntries(
        Object.entries(requirement).map(([scheme, scopes]) => [
          scheme,
          asArray(scopes).filter((scope): scope is string => typeof scope === 'string'),
        ]),
      ),
    );
}
