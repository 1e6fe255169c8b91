// JSON Pointer (RFC 6901) as used in `$ref` fragments: `~1` is `/`, `~0` is `~`, and the fragment
// itself may be percent-encoded.

import { isJsonObject } from './json.js';

// Most tokens need no escaping: those are returned as they are, without scanning twice.
export function escapePointerToken(token: string): string {
  if (!token.includes('~') && !token.includes('/')) return token;
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

export function unescapePointerToken(token: string): string {
  if (!token.includes('~')) return token;
  return token.replaceAll('~1', '/').replaceAll('~0', '~');
}

/** `['paths', '/pets']` → `#/paths/~1pets`. */
export function pointerFromTokens(tokens: readonly string[]): string {
  return tokens.length === 0 ? '#' : `#/${tokens.map(escapePointerToken).join('/')}`;
}

/** Tokens of a local reference (`#/a/b`), or undefined when the text is not a JSON Pointer fragment. */
export function parseLocalPointer(ref: string): string[] | undefined {
  if (!ref.startsWith('#')) return undefined;
  let fragment: string;
  try {
    fragment = ref.includes('%') ? decodeURIComponent(ref.slice(1)) : ref.slice(1);
  } catch {
    return undefined;
  }
  if (fragment === '') return [];
  if (!fragment.startsWith('/')) return undefined; // `#anchor` style: not a pointer
  return fragment.slice(1).split('/').map(unescapePointerToken);
}

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

/** The value at `tokens` below `root`, or undefined when a step is missing. */
export function valueAtPointer(root: unknown, tokens: readonly string[]): unknown {
  let node: unknown = root;
  for (const token of tokens) {
    if (Array.isArray(node)) {
      if (!ARRAY_INDEX.test(token)) return undefined;
      node = node[Number(token)];
    } else if (isJsonObject(node)) {
      if (!Object.hasOwn(node, token)) return undefined;
      node = node[token];
    } else {
      return undefined;
    }
  }
  return node;
}
