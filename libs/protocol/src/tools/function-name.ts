// OpenAI function names must match ^[a-zA-Z0-9_-]{1,64}$. Tool ids from other formats do not always do so
// (seed 003's `core:execute-python-script`, seed 004's Chinese names); this maps any string to a legal name,
// deterministically, readable where possible. The mapping is not invertible by itself: canonical tools keep the
// original id in `origin.id`, which is what maps back.
import { z } from 'zod';

export const FUNCTION_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const FUNCTION_NAME_MAX_LENGTH = 64;

export const FunctionName = z
  .string()
  .regex(FUNCTION_NAME_PATTERN, 'a function name must be 1-64 characters of a-z, A-Z, 0-9, "_" or "-"');
export type FunctionName = z.infer<typeof FunctionName>;

export function isFunctionName(value: unknown): value is FunctionName {
  return typeof value === 'string' && FUNCTION_NAME_PATTERN.test(value);
}

const HASH_LENGTH = 10;
const NAMESPACE_SEPARATOR = /:/g;
const ILLEGAL_RUN = /[^a-zA-Z0-9_-]+/g;

/**
 * A legal function name for `source`. Legal names are returned unchanged; `:` becomes `__`
 * (`core:execute-python-script` → `core__execute-python-script`). When other characters had to be replaced, or
 * the result is longer than 64, a stable hash of the whole source is appended so distinct sources stay distinct.
 */
export function toFunctionName(source: string): FunctionName {
  if (FUNCTION_NAME_PATTERN.test(source)) return source;
  const namespaced = source.replace(NAMESPACE_SEPARATOR, '__');
  const readable = namespaced.replace(ILLEGAL_RUN, '_');
  const lossy = readable !== namespaced;
  if (!lossy && readable.length > 0 && readable.length <= FUNCTION_NAME_MAX_LENGTH) return readable;
  const stem = /[a-zA-Z0-9]/.test(readable) ? readable : 'tool';
  return `${stem.slice(0, FUNCTION_NAME_MAX_LENGTH - HASH_LENGTH - 1)}_${stableHash(source)}`;
}

/** FNV-1a (64 bit) of the UTF-8 bytes, as hex: stable across processes and languages, no crypto import. */
function stableHash(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0').slice(0, HASH_LENGTH);
}
