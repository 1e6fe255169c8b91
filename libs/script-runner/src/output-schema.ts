/**
 * Checks a script's `outputData` against the tool's declared `output` JSON Schema. Compiled validators are
 * kept in a {@link CompiledSchemas}; a schema that does not compile is reported as the tool's fault.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { CompiledSchemas } from './compiled-schemas.js';
import { ScriptError } from './errors.js';

const MAX_REPORTED_ISSUES = 5;
/** Distinct output schemas whose compiled validators are kept (the least recently used go first). */
export const MAX_CACHED_OUTPUT_VALIDATORS = 256;

const ajv = new Ajv({
  strict: false,
  allErrors: true,
  validateFormats: false,
  addUsedSchema: false,
  logger: false,
});

/** Compiles with the shared Ajv instance, leaving nothing in Ajv's own cache (ours owns the validator). */
export function compileOutputSchema(schema: object): ValidateFunction {
  try {
    return ajv.compile(schema);
  } finally {
    ajv.removeSchema(schema);
  }
}

const validators = new CompiledSchemas(compileOutputSchema, MAX_CACHED_OUTPUT_VALIDATORS);

export function checkOutput(schema: object, output: unknown): void {
  const validate = validators.validatorFor(schema);
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
