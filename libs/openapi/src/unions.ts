// `oneOf`/`anyOf` as a model-facing schema. Unions stay `anyOf` (oneOf's exclusivity is not something a
// model can act on) unless the target cannot take them, and the common shapes are simplified:
// `[X, null]` becomes a nullable X, unions of constants become one enum, and unions that only say
// which properties are required become a sentence in the description.

import { mergeAllOf, type ConflictReporter } from './all-of.js';
import { isPrimitive, uniqueJsonValues } from './json.js';
import { makeNullable, typesOf, withTypes, type JsonSchema, type JsonSchemaType } from './json-schema.js';
import { UnionMode } from './options.js';
import { joinSentences } from './text.js';

export interface UnionContext {
  readonly mode: UnionMode;
  readonly report: ConflictReporter;
  readonly simplified: (message: string) => void;
  readonly discriminator: string | undefined;
}

// Keywords that only annotate: they stay on the union itself instead of being copied into each branch.
const ANNOTATIONS = new Set(['description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly']);

export function applyUnion(
  core: JsonSchema,
  rawBranches: readonly JsonSchema[],
  ctx: UnionContext,
): JsonSchema {
  const branches = flattenUnions(rawBranches);
  if (branches.length === 0) return core;

  if (branches.every(isRequiredOnly)) {
    const sets = branches.map((branch) => (branch.required ?? []).join(' + ') || '(none)');
    ctx.simplified(`a union of required-property sets became a description: ${sets.join(' | ')}`);
    return {
      ...core,
      description: joinSentences(
        core.description,
        `Provide one of these sets of properties: ${sets.join(' | ')}.`,
      ),
    };
  }

  const nonNull = branches.filter((branch) => !isNullOnly(branch));
  if (nonNull.length < branches.length && nonNull.length === 1) {
    return makeNullable(mergeInto(core, nonNull[0]!, ctx));
  }
  if (nonNull.length === 1) return mergeInto(core, nonNull[0]!, ctx);

  const constants = asConstantUnion(branches);
  if (constants) return mergeInto(core, constants, ctx);

  const { annotations, structure } = splitAnnotations(core);
  const discriminated =
    ctx.discriminator === undefined
      ? annotations.description
      : joinSentences(
          annotations.description,
          `The "${ctx.discriminator}" property tells the variants apart.`,
        );
  const withDescription =
    discriminated === undefined ? annotations : { ...annotations, description: discriminated };

  if (ctx.mode === UnionMode.MERGE) {
    ctx.simplified(`a union of ${branches.length} variants was merged into one schema`);
    return { ...mergeAllOf([structure, mergeUnionBranches(branches)], ctx.report), ...withDescription };
  }
  const hasStructure = Object.keys(structure).length > 0;
  const variants = hasStructure
    ? branches.map((branch) => mergeAllOf([structure, branch], ctx.report))
    : branches;
  return { ...withDescription, anyOf: variants };
}

function mergeInto(core: JsonSchema, branch: JsonSchema, ctx: UnionContext): JsonSchema {
  // The core's own annotations win over the branch's.
  return mergeAllOf([core, branch], ctx.report);
}

function flattenUnions(branches: readonly JsonSchema[]): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const branch of branches) {
    const keys = Object.keys(branch).filter((key) => key !== 'description');
    if (branch.anyOf && keys.length === 1) out.push(...flattenUnions(branch.anyOf));
    else out.push(branch);
  }
  return out;
}

function isRequiredOnly(branch: JsonSchema): boolean {
  return (
    Object.keys(branch).every((key) => key === 'required' || key === 'description' || key === 'type') &&
    branch.required !== undefined &&
    (branch.type === undefined || branch.type === 'object')
  );
}

function isNullOnly(branch: JsonSchema): boolean {
  const types = typesOf(branch);
  return (
    (types.length === 1 && types[0] === 'null' && !branch.anyOf) ||
    (branch.enum?.length === 1 && branch.enum[0] === null)
  );
}

/** `[{const: 1, description: 'A'}, {const: 2}]` → `{enum: [1, 2], description: '1: A'}`. */
function asConstantUnion(branches: readonly JsonSchema[]): JsonSchema | undefined {
  const values: unknown[] = [];
  const labels: string[] = [];
  const types = new Set<JsonSchemaType>();
  for (const branch of branches) {
    const allowed = new Set(['const', 'enum', 'type', 'description']);
    if (!Object.keys(branch).every((key) => allowed.has(key))) return undefined;
    const branchValues = branch.const !== undefined ? [branch.const] : branch.enum;
    if (!branchValues || !branchValues.every(isPrimitive)) return undefined;
    for (const type of typesOf(branch)) types.add(type);
    values.push(...branchValues);
    if (branch.description && branchValues.length === 1)
      labels.push(`${JSON.stringify(branchValues[0])}: ${branch.description}`);
  }
  const schema = withTypes({ enum: uniqueJsonValues(values) }, [...types]);
  return labels.length > 0 ? { ...schema, description: `Values: ${labels.join('; ')}.` } : schema;
}

function splitAnnotations(schema: JsonSchema): { annotations: JsonSchema; structure: JsonSchema } {
  const annotations: Record<string, unknown> = {};
  const structure: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    (ANNOTATIONS.has(key) ? annotations : structure)[key] = value;
  }
  return { annotations: annotations as JsonSchema, structure: structure as JsonSchema };
}

/** One schema accepting what any branch accepts, as far as a flat schema can say it. */
function mergeUnionBranches(branches: readonly JsonSchema[]): JsonSchema {
  const types = new Set(branches.flatMap(typesOf));
  const anyUntyped = branches.some(
    (branch) => typesOf(branch).length === 0 && !branch.properties && !branch.enum,
  );
  const properties: Record<string, JsonSchema> = {};
  for (const branch of branches) {
    for (const [name, schema] of Object.entries(branch.properties ?? {})) properties[name] ??= schema;
  }
  const requiredEverywhere = branches
    .map((branch) => new Set(branch.required ?? []))
    .reduce((acc, set) => new Set([...acc].filter((name) => set.has(name))));
  const enums = branches.every((branch) => branch.enum)
    ? uniqueJsonValues(branches.flatMap((b) => b.enum ?? []))
    : undefined;
  let merged: JsonSchema = anyUntyped ? {} : withTypes({}, [...types]);
  if (Object.keys(properties).length > 0) merged = { ...merged, properties };
  if (requiredEverywhere.size > 0) merged = { ...merged, required: [...requiredEverywhere] };
  if (enums) merged = { ...merged, enum: enums };
  const items = branches.map((branch) => branch.items).filter((item): item is JsonSchema => !!item);
  if (items.length > 0) merged = { ...merged, items: mergeUnionBranches(items) };
  return merged;
}
