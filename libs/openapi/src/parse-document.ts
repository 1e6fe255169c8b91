// Parses OpenAPI text: JSON when it looks like JSON, YAML (1.2 core schema, so `no`/`yes` stay strings)
// otherwise. Pure: no file access. Text with no document in it, and documents nested deeper than any real
// one (every later step, cloning included, would overflow the stack on them), are refused with coded errors.

import { parse as parseYaml } from 'yaml';
import { DocumentParseError, DocumentTooDeepError, EmptyDocumentError } from './errors.js';

/** Deepest nesting of objects and arrays accepted; real documents stay below 100. */
export const MAX_DOCUMENT_DEPTH = 1000;

export function parseDocumentText(text: string, name = 'document'): unknown {
  const parsed = parseText(text, name);
  if (parsed === null || parsed === undefined) {
    throw new EmptyDocumentError(`${name} is empty: it holds no JSON or YAML document`, { name });
  }
  const depth = nestingBeyond(parsed, MAX_DOCUMENT_DEPTH);
  if (depth !== undefined) {
    throw new DocumentTooDeepError(
      `${name} nests objects and lists deeper than ${MAX_DOCUMENT_DEPTH} levels (or its YAML aliases make a cycle)`,
      { name, maxDepth: MAX_DOCUMENT_DEPTH },
    );
  }
  return parsed;
}

function parseText(text: string, name: string): unknown {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Not JSON after all; YAML is a superset of JSON, so let it have a go with better messages.
    }
  }
  try {
    return parseYaml(text, { uniqueKeys: false, maxAliasCount: 100_000 }) as unknown;
  } catch (error) {
    if (isStackOverflow(error)) {
      // The YAML parser recurses per level of nesting: a document this deep overflows it (the parser
      // reports that as its own error, RESOURCE_EXHAUSTION, with the RangeError's message).
      throw new DocumentTooDeepError(
        `${name} nests too deeply to be parsed (more than ${MAX_DOCUMENT_DEPTH} levels)`,
        { name, maxDepth: MAX_DOCUMENT_DEPTH },
        { cause: error },
      );
    }
    throw new DocumentParseError(
      `${name} is neither JSON nor YAML: ${(error as Error).message}`,
      { name },
      { cause: error },
    );
  }
}

/**
 * Walks `root` without recursion and returns a depth over `limit` if one is reached. A node shared through
 * YAML aliases is walked again only when reached deeper than before, so a cycle ends at the limit.
 */
function nestingBeyond(root: unknown, limit: number): number | undefined {
  const deepestSeen = new WeakMap<object, number>();
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return depth;
    if ((deepestSeen.get(node) ?? 0) >= depth) continue;
    deepestSeen.set(node, depth);
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  return undefined;
}

function isStackOverflow(error: unknown): boolean {
  if (error instanceof RangeError) return true;
  return error instanceof Error && /maximum call stack size exceeded/i.test(error.message);
}
