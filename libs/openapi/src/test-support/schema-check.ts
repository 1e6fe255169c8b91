// Test helper: checks that a converted function is what a model provider accepts: a JSON Schema ajv
// compiles (draft 2020-12; unknown formats tolerated), with no `$ref` left, and a legal name.

import { Ajv2020 } from 'ajv/dist/2020.js';
import { isFunctionName } from '@agentmesh/protocol';
import { listReferences } from '../ref-walker.js';

const ajv = new Ajv2020({ strict: false, logger: false, allErrors: false, validateFormats: false });

/** Problems with one converted schema; empty when it is fine. */
export function schemaProblems(name: string, parameters: object): string[] {
  const problems: string[] = [];
  if (!isFunctionName(name)) problems.push(`illegal function name ${JSON.stringify(name)}`);
  const refs = listReferences(parameters);
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
