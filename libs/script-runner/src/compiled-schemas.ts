/**
 * Compiled JSON Schema validators, kept per schema: by the schema object itself, then by its JSON text, so
 * two copies of one schema compile once (each task parses its tools afresh, so the same schema arrives as a
 * new object every time). The text-keyed entries form a bounded LRU. A schema that does not compile is
 * remembered as such, with its error. Used for scripts' output schemas here and, by the executor, for
 * tools' parameter schemas.
 */
import type { ValidateFunction } from 'ajv';

export class CompiledSchemas {
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
      result = this.compileOrError(schema);
    }
    if (text !== undefined) {
      this.byText.set(text, result);
      if (this.byText.size > this.maxEntries) this.byText.delete(this.byText.keys().next().value!);
    }
    this.byObject.set(schema, result);
    return result;
  }

  /** Schemas held by their text. */
  size(): number {
    return this.byText.size;
  }

  private compileOrError(schema: object): ValidateFunction | Error {
    try {
      return this.compile(schema);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
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
