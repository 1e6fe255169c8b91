// Parses OpenAPI text: JSON when it looks like JSON, YAML (1.2 core schema, so `no`/`yes` stay strings)
// otherwise. Pure: no file access.

import { parse as parseYaml } from 'yaml';
import { DocumentParseError } from './errors.js';

export function parseDocumentText(text: string, name = 'document'): unknown {
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
    throw new DocumentParseError(
      `${name} is neither JSON nor YAML: ${(error as Error).message}`,
      { name },
      { cause: error },
    );
  }
}
