// Resolves local `$ref`s (`#/components/...`, Swagger's `#/definitions/...`, any JSON Pointer with `~0`/`~1`
// escapes) against one document, memoising every pointer. External references must have been bundled
// into the document first (see bundle.ts); here they are reported as unresolved, never fetched.

import { isJsonObject } from './json.js';
import { parseLocalPointer, pointerFromTokens, valueAtPointer } from './json-pointer.js';

export type RefResolution =
  | { readonly ok: true; readonly pointer: string; readonly value: unknown }
  | { readonly ok: false; readonly reason: string };

export type DerefResult =
  | { readonly ok: true; readonly value: unknown; readonly pointer: string | undefined }
  | { readonly ok: false; readonly reason: string; readonly ref: string };

const LONE_TILDE = /~(?![01])/;

// Reference Objects pointing at Reference Objects: a longer chain than this is treated as a cycle.
const MAX_REF_CHAIN = 32;

export class RefResolver {
  private readonly cache = new Map<string, RefResolution>();

  constructor(readonly root: unknown) {}

  resolve(ref: string): RefResolution {
    const cached = this.cache.get(ref);
    if (cached) return cached;
    const resolution = this.resolveUncached(ref);
    this.cache.set(ref, resolution);
    return resolution;
  }

  /**
   * Follows a chain of Reference Objects (a parameter, request body or path item given as `$ref`) to the
   * object it finally names. A node without `$ref` is returned as it is.
   */
  deref(node: unknown): DerefResult {
    let current = node;
    let pointer: string | undefined;
    for (let hops = 0; hops < MAX_REF_CHAIN; hops++) {
      if (!isJsonObject(current) || typeof current.$ref !== 'string')
        return { ok: true, value: current, pointer };
      const resolution = this.resolve(current.$ref);
      if (!resolution.ok) return { ok: false, reason: resolution.reason, ref: current.$ref };
      pointer = resolution.pointer;
      current = resolution.value;
    }
    return { ok: false, reason: 'reference chain does not end (cycle)', ref: pointer ?? '' };
  }

  private resolveUncached(ref: string): RefResolution {
    if (!ref.startsWith('#')) {
      return { ok: false, reason: `external reference "${ref}" (bundle the document with its files first)` };
    }
    const tokens = parseLocalPointer(ref);
    if (!tokens) return { ok: false, reason: `"${ref}" is not a JSON Pointer reference` };
    const value = valueAtPointer(this.root, tokens);
    if (value === undefined) return { ok: false, reason: `"${ref}" points at nothing in the document` };
    // A ref written canonically (no percent-encoding, every `~` an escape) is its own pointer.
    const pointer = !ref.includes('%') && !LONE_TILDE.test(ref) ? ref : pointerFromTokens(tokens);
    return { ok: true, pointer, value };
  }
}
