// Checks the arguments a model wrote for a tool call before anything runs. Failures come back as
// INVALID_REQUEST with a message naming each bad path and why, written for the model to correct its call.
// Defaults from the schema are filled in (on a copy). Unknown `format`s and non-standard keywords are tolerated:
// tool schemas come from many hands. Compiled validators are kept in a CompiledSchemas (by object, then by
// JSON text in a bounded LRU): compiling a task's schemas afresh would cost more than the rest of the call.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ErrorCode, formatIssuePath, type IssueDescription } from '@agentmesh/protocol';
import { CompiledSchemas } from '@agentmesh/script-runner';
import type { ToolFailure } from './tool-outcome.js';

export type ArgumentCheck =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly error: ToolFailure };

const MAX_REPORTED_ISSUES = 10;

const ajv = new Ajv({
  strict: false,
  allErrors: true,
  useDefaults: true,
  validateFormats: false,
  validateSchema: false,
  addUsedSchema: false,
  logger: false,
});

/** Distinct tool schemas whose compiled validators are kept (the least recently used go first). */
export const MAX_CACHED_ARGUMENT_VALIDATORS = 512;

/** Compiles a tool's parameters schema with the shared Ajv instance, leaving nothing in Ajv's own cache. */
export function compileArgumentSchema(schema: object): ValidateFunction {
  // Ajv's default dialect is draft-07; a `$schema` naming another draft would only make it refuse the schema.
  const { $schema: _dialect, ...body } = schema as Record<string, unknown>;
  try {
    return ajv.compile(body);
  } finally {
    // Our cache owns the validator; Ajv's own cache would keep every schema ever seen alive.
    ajv.removeSchema(body);
  }
}

const validators = new CompiledSchemas(compileArgumentSchema, MAX_CACHED_ARGUMENT_VALIDATORS);

/** The model's raw `arguments` string as an object. An empty string means "no arguments". */
export function parseToolArguments(raw: string): ArgumentCheck {
  if (raw.trim() === '') return { ok: true, value: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return invalid(`the arguments are not valid JSON (${reason}); send one JSON object`);
  }
  if (!isPlainObject(parsed)) {
    return invalid(`the arguments must be a JSON object, not ${describeJsonType(parsed)}`);
  }
  return { ok: true, value: parsed };
}

/** Validates `args` against a tool's parameters schema; the value returned has the schema's defaults. */
export function validateToolArguments(schema: object, args: unknown): ArgumentCheck {
  const validate = validators.validatorFor(schema);
  if (validate instanceof Error) {
    return {
      ok: false,
      error: {
        code: ErrorCode.TOOL_ERROR,
        message: `the tool's parameter schema is unusable: ${validate.message}`,
      },
    };
  }
  if (!isPlainObject(args))
    return invalid(`the arguments must be a JSON object, not ${describeJsonType(args)}`);
  const value = structuredClone(args);
  if (validate(value)) return { ok: true, value };
  const issues = describeIssues(validate.errors ?? []);
  const shown = issues.slice(0, MAX_REPORTED_ISSUES);
  const more = issues.length > shown.length ? `; and ${issues.length - shown.length} more` : '';
  const list = shown.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ');
  return invalid(`invalid arguments: ${list}${more}`, { issues });
}

/**
 * Validates any JSON value (a task's final answer) against a JSON Schema with the same validator as tool
 * arguments; `message` lists the failing paths for the model to correct.
 */
export function validateJsonValue(
  schema: object,
  value: unknown,
): { ok: true; value: unknown } | { ok: false; message: string; issues: IssueDescription[] } {
  const validate = validators.validatorFor(schema);
  if (validate instanceof Error) {
    return { ok: false, message: `the schema is unusable: ${validate.message}`, issues: [] };
  }
  const copy = structuredClone(value);
  if (validate(copy)) return { ok: true, value: copy };
  const issues = describeIssues(validate.errors ?? []);
  const shown = issues.slice(0, MAX_REPORTED_ISSUES);
  const more = issues.length > shown.length ? `; and ${issues.length - shown.length} more` : '';
  const list = shown.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ');
  return { ok: false, message: `${list}${more}`, issues };
}

function describeIssues(errors: readonly ErrorObject[]): IssueDescription[] {
  const seen = new Set<string>();
  const issues: IssueDescription[] = [];
  for (const error of errors) {
    const issue = describeIssue(error);
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

function describeIssue(error: ErrorObject): IssueDescription {
  const path: PropertyKey[] = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
    case 'dependentRequired':
    case 'dependencies':
      return { path: formatIssuePath([...path, String(params.missingProperty)]), message: 'is required' };
    case 'additionalProperties':
      return {
        path: formatIssuePath([...path, String(params.additionalProperty)]),
        message: 'is not an allowed property',
      };
    case 'enum':
      return {
        path: formatIssuePath(path),
        message: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    case 'const':
      return { path: formatIssuePath(path), message: `must be ${JSON.stringify(params.allowedValue)}` };
    default:
      return { path: formatIssuePath(path), message: error.message ?? `fails ${error.keyword}` };
  }
}

function invalid(message: string, detail?: unknown): ArgumentCheck {
  const error: ToolFailure =
    detail === undefined
      ? { code: ErrorCode.INVALID_REQUEST, message }
      : { code: ErrorCode.INVALID_REQUEST, message, detail };
  return { ok: false, error };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
