// Function names a model provider accepts (`^[a-zA-Z0-9_-]{1,64}$`), derived from an operationId or from
// method + path: illegal characters become `_` (GitHub's `repos/get`, Jira's dotted ids, spaces), names
// over 64 characters keep a prefix plus a stable hash of the whole, and a registry keeps them unique.

import { shortHash } from './hash.js';

export const FUNCTION_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const MAX_FUNCTION_NAME_LENGTH = 64;

export function isValidFunctionName(name: string): boolean {
  return FUNCTION_NAME_PATTERN.test(name);
}

/**
 * A legal name for any text: sanitised, and truncated with a hash of the original when too long. A text
 * with nothing usable (e.g. a Chinese tool title) becomes `fn_<hash>`, so distinct texts stay distinct.
 */
export function toFunctionName(text: string): string {
  const sanitised =
    text
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^a-zA-Z0-9_-]+/g, '_')
      .replace(/_{2,}/g, '_')
      .replace(/^[_-]+|[_-]+$/g, '') || `fn_${shortHash(text)}`;
  if (sanitised.length <= MAX_FUNCTION_NAME_LENGTH) return sanitised;
  return withSuffix(sanitised, shortHash(text));
}

/** The base name of an operation: its operationId, else `method_path` (`get_pets_petId`). */
export function operationFunctionName(operationId: string | undefined, method: string, path: string): string {
  if (operationId !== undefined && operationId.trim() !== '') return toFunctionName(operationId);
  return toFunctionName(`${method.toLowerCase()}_${path}`);
}

/** `name` shortened so that `name_suffix` fits in 64 characters. */
function withSuffix(name: string, suffix: string): string {
  const room = MAX_FUNCTION_NAME_LENGTH - suffix.length - 1;
  return `${name.slice(0, room).replace(/[_-]+$/, '')}_${suffix}`;
}

/**
 * Hands out unique names within one document. Uniqueness ignores case, because some providers and
 * tool registries compare names case-insensitively.
 */
export class FunctionNameRegistry {
  private readonly taken = new Set<string>();

  claim(baseName: string): string {
    let name = baseName;
    for (let n = 2; this.taken.has(name.toLowerCase()); n++) name = withSuffix(baseName, String(n));
    this.taken.add(name.toLowerCase());
    return name;
  }
}
