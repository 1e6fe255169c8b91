// Keeps one function within a size budget (`maxFunctionBytes`, 32 KiB by default): a tool of 200 KiB is
// some 50k tokens, more than a model can use well. Only words are given up, never structure: examples and
// descriptions are shortened, then dropped, level by level from the deepest schemas up (where they matter
// least to a model choosing arguments); last, the function's own description is cut. No
// parameter, property, type, enum or constraint is removed, so a tool may stay over budget; the note says so.

import type { FunctionParameters, JsonSchema } from './json-schema.js';
import type { SchemaMeasures } from './shared-schemas.js';
import { boundText } from './text.js';

/** What a description is cut to in the first round. */
const SHORT_DESCRIPTION = 120;
/** What the function's own description is cut to, last. */
const SHORT_FUNCTION_DESCRIPTION = 300;

export interface BudgetedFunction {
  readonly name: string;
  readonly description: string;
  readonly parameters: FunctionParameters;
}

export interface BudgetResult extends BudgetedFunction {
  /** Set when the function was over budget: what was done, sizes before and after. */
  readonly note?: string;
}

type Edit = (schema: JsonSchema) => JsonSchema;

export function functionBytes(fn: BudgetedFunction): number {
  return Buffer.byteLength(JSON.stringify(fn));
}

/**
 * `functionBytes`, exactly, from measures cached by schema identity: an edit copies only the path to what
 * it changed, so weighing the function again costs the copies, not the whole text.
 */
export function measuredFunctionBytes(measures: SchemaMeasures): (fn: BudgetedFunction) => number {
  return (fn) => {
    let bytes = 2;
    let first = true;
    for (const key in fn) {
      const value = (fn as unknown as Record<string, unknown>)[key];
      if (value === undefined) continue;
      bytes += Buffer.byteLength(JSON.stringify(key)) + 1 + (first ? 0 : 1);
      first = false;
      bytes +=
        key === 'parameters' && value !== null && typeof value === 'object'
          ? measures.bytes(value as JsonSchema)
          : Buffer.byteLength(JSON.stringify(value));
    }
    return bytes;
  };
}

export function fitFunctionBudget(
  fn: BudgetedFunction,
  budget: number,
  sizeOf: (fn: BudgetedFunction) => number = functionBytes,
): BudgetResult {
  const before = sizeOf(fn);
  if (before <= budget) return fn;
  const deepest = maxDepth(fn.parameters);
  let current: BudgetedFunction = fn;
  let size = before;
  const steps: string[] = [];
  // Level by level from the deepest: first shorten (examples out, descriptions cut), then drop the
  // descriptions, and only then touch the level above, so arguments keep their words the longest.
  let shortenedFrom: number | undefined;
  let droppedFrom: number | undefined;
  for (let depth = deepest; depth >= 1 && size > budget; depth--) {
    for (const edit of [shorten, withoutDescription]) {
      if (size <= budget) break;
      const parameters = editAtDepth(current.parameters, depth, edit);
      if (parameters === current.parameters) continue;
      current = { ...current, parameters };
      size = sizeOf(current);
      if (edit === shorten) shortenedFrom = depth;
      else droppedFrom = depth;
    }
  }
  if (shortenedFrom !== undefined) {
    steps.push(
      `examples dropped and descriptions cut to ${SHORT_DESCRIPTION} characters at depth ${shortenedFrom} and below`,
    );
  }
  if (droppedFrom !== undefined) steps.push(`descriptions dropped at depth ${droppedFrom} and below`);
  if (size > budget) {
    const cut = boundText(current.description, SHORT_FUNCTION_DESCRIPTION);
    if (cut.truncated) {
      current = { ...current, description: cut.text };
      size = sizeOf(current);
      steps.push(`the function description cut to ${SHORT_FUNCTION_DESCRIPTION} characters`);
    }
  }
  const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
  const outcome =
    size <= budget
      ? `now ${kib(size)}`
      : `still ${kib(size)}: its parameters alone exceed the budget, and none is dropped`;
  const done = steps.length > 0 ? steps.join('; ') : 'nothing could be shortened';
  return {
    ...current,
    note: `the function was ${kib(before)}, over its ${kib(budget)} budget: ${done}; ${outcome}`,
  };
}

function shorten(schema: JsonSchema): JsonSchema {
  let out = schema;
  if (out.examples !== undefined) {
    const { examples: _dropped, ...rest } = out;
    out = rest;
  }
  if (out.description !== undefined) {
    const cut = boundText(out.description, SHORT_DESCRIPTION);
    if (cut.truncated) out = { ...out, description: cut.text };
  }
  return out;
}

function withoutDescription(schema: JsonSchema): JsonSchema {
  if (schema.description === undefined) return schema;
  const { description: _dropped, ...rest } = schema;
  return rest;
}

/**
 * Depth of a schema node: an argument is 1, its properties, items, values and union branches one more.
 * A `$defs` entry counts as 2 (it is only ever reached from inside an argument).
 */
function editAtDepth(parameters: FunctionParameters, depth: number, edit: Edit): FunctionParameters {
  const visit = (schema: JsonSchema, at: number): JsonSchema => {
    let out = at === depth ? edit(schema) : schema;
    if (at >= depth) return out;
    const copy = (): JsonSchema => (out === schema ? (out = { ...schema }) : out);
    if (schema.properties) {
      let changed = false;
      const properties: Record<string, JsonSchema> = {};
      for (const [key, child] of Object.entries(schema.properties)) {
        properties[key] = visit(child, at + 1);
        if (properties[key] !== child) changed = true;
      }
      if (changed) copy().properties = properties;
    }
    if (schema.items) {
      const items = visit(schema.items, at + 1);
      if (items !== schema.items) copy().items = items;
    }
    if (typeof schema.additionalProperties === 'object') {
      const values = visit(schema.additionalProperties, at + 1);
      if (values !== schema.additionalProperties) copy().additionalProperties = values;
    }
    if (schema.anyOf) {
      const branches = schema.anyOf.map((branch) => visit(branch, at + 1));
      if (branches.some((branch, i) => branch !== schema.anyOf![i])) copy().anyOf = branches;
    }
    return out;
  };
  const mapRecord = (
    record: Record<string, JsonSchema>,
    at: number,
  ): Record<string, JsonSchema> | undefined => {
    let changed = false;
    const out: Record<string, JsonSchema> = {};
    for (const [key, schema] of Object.entries(record)) {
      out[key] = visit(schema, at);
      if (out[key] !== schema) changed = true;
    }
    return changed ? out : undefined;
  };
  const properties = mapRecord(parameters.properties, 1);
  const defs = parameters.$defs && mapRecord(parameters.$defs, 2);
  if (properties === undefined && defs === undefined) return parameters;
  return {
    ...parameters,
    ...(properties !== undefined ? { properties } : {}),
    ...(defs !== undefined ? { $defs: defs } : {}),
  };
}

function maxDepth(parameters: FunctionParameters): number {
  let deepest = 1;
  const pending: Array<[JsonSchema, number]> = [
    ...Object.values(parameters.properties).map((schema): [JsonSchema, number] => [schema, 1]),
    ...Object.values(parameters.$defs ?? {}).map((schema): [JsonSchema, number] => [schema, 2]),
  ];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [schema, at] = next;
    deepest = Math.max(deepest, at);
    for (const child of Object.values(schema.properties ?? {})) pending.push([child, at + 1]);
    if (schema.items) pending.push([schema.items, at + 1]);
    if (typeof schema.additionalProperties === 'object') pending.push([schema.additionalProperties, at + 1]);
    for (const branch of schema.anyOf ?? []) pending.push([branch, at + 1]);
  }
  return deepest;
}
