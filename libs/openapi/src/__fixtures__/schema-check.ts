// Test helper: checks that a converted function is what a model provider accepts: a JSON Schema ajv
// compiles (draft 2020-12; unknown formats tolerated), with no `$ref` left but those into its own `$defs`,
// and a legal name.

import { Ajv2020 } from 'ajv/dist/2020.js';
import { isFunctionName } from '@agentmesh/protocol';
import { listReferences } from '../ref-walker.js';

const ajv = new Ajv2020({ strict: false, logger: false, allErrors: false, validateFormats: false });

/** Problems with one converted schema; empty when it is fine. */
export function schemaProblems(name: string, parameters: object): string[] {
  const problems: string[] = [];
  if (!isFunctionName(name)) problems.push(`illegal function name ${JSON.stringify(name)}`);
  // Only refs into the function's own `$defs` may stay (ajv below checks they resolve).
  const refs = listReferences(parameters).filter((ref) => !ref.startsWith('#/$defs/'));
  if (refs.length > 0) problems.push(`$ref left: ${refs.slice(0, 3).join(', ')}`);
  try {
    ajv.compile(parameters);
    ajv.removeSchema(parameters);
  } catch (error) {
    problems.push(`ajv: ${(error as Error).message}`);
  }
  return problems;
}

/** Validates data against a converted schema, returning ajv's error text or undefined. */
export function validationError(parameters: object, data: unknown): string | undefined {
  const validate = ajv.compile(parameters);
  const ok = validate(data);
  ajv.removeSchema(parameters);
  return ok ? undefined : ajv.errorsText(validate.errors);
}

/**
 * What OpenAI's strict mode would refuse in a converted schema: an object (anywhere: properties, items,
 * anyOf branches, `$defs`) not closed with `additionalProperties: false`, or not listing every property
 * as required.
 */
export function strictProblems(parameters: object): string[] {
  const problems: string[] = [];
  const stack: Array<[unknown, string]> = [[parameters, '#']];
  while (stack.length > 0) {
    const [node, where] = stack.pop()!;
    if (node === null || typeof node !== 'object' || Array.isArray(node)) continue;
    const schema = node as Record<string, unknown>;
    const types = schema.type === undefined ? [] : [schema.type].flat();
    if (types.includes('object') || schema.properties !== undefined) {
      if (schema.additionalProperties !== false)
        problems.push(`${where}: object without additionalProperties: false`);
      const properties = Object.keys((schema.properties as object | undefined) ?? {});
      const required = (schema.required as string[] | undefined) ?? [];
      if (properties.some((name) => !required.includes(name))) problems.push(`${where}: optional property`);
    }
    for (const [key, child] of Object.entries((schema.properties as object | undefined) ?? {}))
      stack.push([child, `${where}/properties/${key}`]);
    for (const [key, child] of Object.entries((schema.$defs as object | undefined) ?? {}))
      stack.push([child, `${where}/$defs/${key}`]);
    if (schema.items !== undefined) stack.push([schema.items, `${where}/items`]);
    if (Array.isArray(schema.anyOf))
      schema.anyOf.forEach((branch, i) => stack.push([branch, `${where}/anyOf/${i}`]));
  }
  return problems;
}
