/**
 * Checks a script's `outputData` against the tool's declared `output` JSON Schema. Compiled validators are
 * kept by the schema's JSON text in a bounded LRU, since each task parses its tools afresh and the same
 * schema arrives as a new object every time; a schema that does not compile is reported as the tool's fault.
 */
import { Ajv, type ValidateFunction } from 'ajv';
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

/** Compiled validators by schema object, then by JSON text; a schema that does not compile keeps its error. */
export class CompiledOutputSchemas {
  private readonly byObject = new WeakMap<object, ValidateFunction | Error>();
  private readonly byText = new Map<string, ValidateFunction | Error>();

  constructor(
    private readonly compile: (schema: object) => ValidateFunction,
    private readonly maxEntries: number,
  ) {}

  validatorFor(schema: object): ValidateFunction | Error {
    const known = this.byObject.get(schema);
    if (known !== undefined) return known;
    const text = jsonText(schema);
    let result = text === undefined ? undefined : this.byText.get(text);
    if (result !== undefined) {
      // Most recently used last: Map keeps insertion order.
      this.byText.delete(text!);
    } else {
      try {
        result = this.compile(schema);
      } catch (error) {
        result = error instanceof Error ? error : new Error(String(error));
      }
    }
    if (text !== undefined) {
      this.byText.set(text, result);
      if (this.byText.size > this.maxEntries) this.byText.delete(this.byText.keys().next().value!);
    }
    this.byObject.set(schema, result);
    return result;
  }
}

function jsonText(schema: object): string | undefined {
  try {
    return JSON.stringify(schema);
  } catch {
    // Not JSON (a cycle): compiled by object identity only.
    return undefined;
  }
}

const validators = new CompiledOutputSchemas(compileOutputSchema, MAX_CACHED_OUTPUT_VALIDATORS);

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
