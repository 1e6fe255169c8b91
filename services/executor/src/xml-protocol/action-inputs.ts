/**
 * Turns an ACTION's `<input>` texts into the tool call's arguments, led by the tool's parameter schema
 * (seed 003 §3.1: complex values are written as JSON text). A parameter whose schema allows a string keeps
 * the text as it is; one that takes only objects, arrays, numbers, booleans or null has its text parsed as
 * JSON. Text that does not parse is kept as a string: the loop's schema check then refuses the call, and
 * `jsonInputProblems` says why when the refusal is shown to the model. Not knowing the type (a parameter
 * missing from the schema, or a schema without `type`), only text that looks like an object or array is parsed.
 */
import type { ActionInput } from './action-parser.js';
import { isJsonObject } from '@agentmesh/protocol';

type JsonSchema = Readonly<Record<string, unknown>>;

const ValueKind = { STRING: 'string', JSON: 'json', UNKNOWN: 'unknown' } as const;
type ValueKind = (typeof ValueKind)[keyof typeof ValueKind];

export function toToolArguments(
  inputs: readonly ActionInput[],
  parameters: JsonSchema | undefined,
): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const input of inputs) {
    args[input.name] = inputValue(input.text, valueKind(propertySchema(parameters, input.name)));
  }
  return args;
}

/** Inputs the schema wants as JSON whose text is not JSON, each described for the model. */
export function jsonInputProblems(
  args: Readonly<Record<string, unknown>>,
  parameters: JsonSchema | undefined,
): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(args)) {
    if (typeof value !== 'string' || valueKind(propertySchema(parameters, name)) !== ValueKind.JSON) continue;
    const reason = jsonParseError(value);
    if (reason !== undefined) problems.push(`input "${name}" is not valid JSON (${reason})`);
  }
  return problems;
}

function inputValue(text: string, kind: ValueKind): unknown {
  if (kind === ValueKind.STRING) return text;
  if (kind === ValueKind.UNKNOWN && !/^\s*[[{]/.test(text)) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  // A JSON string where the schema wants something else stays as written (quotes included), so the schema
  // refuses it and the text is not later mistaken for JSON that failed to parse.
  return typeof parsed === 'string' ? text : parsed;
}

function jsonParseError(text: string): string | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function propertySchema(parameters: JsonSchema | undefined, name: string): JsonSchema | undefined {
  const properties = parameters?.['properties'];
  if (!isJsonObject(properties) || !Object.hasOwn(properties, name)) return undefined;
  const schema = properties[name];
  return isJsonObject(schema) ? schema : undefined;
}

function valueKind(schema: JsonSchema | undefined): ValueKind {
  const types = schema === undefined ? undefined : typesOf(schema);
  if (types === undefined || types.size === 0) return ValueKind.UNKNOWN;
  return types.has('string') ? ValueKind.STRING : ValueKind.JSON;
}

/** The JSON types a schema admits, or undefined when it does not say. */
function typesOf(schema: JsonSchema): Set<string> | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return new Set([type]);
  if (Array.isArray(type)) return new Set(type.filter((t): t is string => typeof t === 'string'));
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const branches = schema[keyword];
    if (!Array.isArray(branches)) continue;
    const union = new Set<string>();
    for (const branch of branches) {
      const branchTypes = isJsonObject(branch) ? typesOf(branch) : undefined;
      if (branchTypes === undefined) return undefined;
      for (const t of branchTypes) union.add(t);
    }
    return union;
  }
  if (Array.isArray(schema['enum'])) return new Set(schema['enum'].map(jsonTypeOf));
  if (Object.hasOwn(schema, 'const')) return new Set([jsonTypeOf(schema['const'])]);
  return undefined;
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
