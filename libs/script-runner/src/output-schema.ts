/**
 * Checks a script's `outputData` against the tool's declared `output` JSON Schema. Compiled validators
 * are cached per schema object; a schema that does not compile is reported as the tool's fault.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { ScriptError } from './errors.js';

const MAX_REPORTED_ISSUES = 5;

const ajv = new Ajv({
  strict: false,
  allErrors: true,
  validateFormats: false,
  addUsedSchema: false,
  logger: false,
});
const compiled = new WeakMap<object, ValidateFunction | Error>();

export function checkOutput(schema: object, output: unknown): void {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    try {
      validate = ajv.compile(schema);
    } catch (error) {
      validate = error instanceof Error ? error : new Error(String(error));
    }
    compiled.set(schema, validate);
  }
  if (validate instanceof Error) {
    throw new ScriptError(`the tool's output schema is invalid: ${validate.message}`, { cause: validate });
  }
  if (validate(output)) return;
  const issues = (validate.errors ?? [])
    .slice(0, MAX_REPORTED_ISSUES)
    .map((issue) => `${issue.instancePath || '(root)'} ${issue.message ?? 'is invalid'}`);
  throw new ScriptError('the script output does not match the tool output schema', {
    details: issues.join('; '),
  });
}
