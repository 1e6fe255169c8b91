// Checks the arguments a model wrote for a tool call before anything runs. Failures come back as
// INVALID_REQUEST with a message naming each bad path and why, written for the model to correct its call.
// Defaults from the schema are filled in (on a copy). Unknown `format`s and non-standard keywords are tolerated:
// tool schemas come from many hands.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ErrorCode, formatIssuePath, type IssueDescription } from '@agentmesh/protocol';
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

/** Compiled validators per schema object; a schema that does not compile is remembered as such. */
const compiled = new WeakMap<object, ValidateFunction | Error>();

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
  const validate = validatorFor(schema);
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

function validatorFor(schema: object): ValidateFunction | Error {
  const known = compiled.get(schema);
  if (known !== undefined) return known;
  let result: ValidateFunction | Error;
  // Ajv's default dialect is draft-07; a `$schema` naming another draft would only make it refuse the schema.
  const { $schema: _dialect, ...body } = schema as Record<string, unknown>;
  try {
    result = ajv.compile(body);
  } catch (error) {
    result = error instanceof Error ? error : new Error(String(error));
  } finally {
    // Our WeakMap owns the validator; Ajv's own cache would keep every schema ever seen alive.
    ajv.removeSchema(body);
  }
  compiled.set(schema, result);
  return result;
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
