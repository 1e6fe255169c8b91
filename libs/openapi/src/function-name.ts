// Function names of operations. The mapping of any text to a legal name (`^[a-zA-Z0-9_-]{1,64}$`) is the
// protocol's naming contract (`toFunctionName` of @agentmesh/protocol), used here as everywhere else; this
// module only derives the text an operation is named from, and keeps names unique within one document.

import { FUNCTION_NAME_MAX_LENGTH, toFunctionName } from '@agentmesh/protocol';

// Characters that structure a path key (segments, templates, a fragment or fixed query), read as word breaks.
const URL_PUNCTUATION = /[/{}#?&=]+/;

/**
 * The base name of an operation: its operationId, else `method_path` with the path's separators and
 * braces (and a path key's `#`, `?`, `&`, `=`) read as `_` (`GET /guilds/{guild_id}` → `get_guilds_guild_id`), so a plain path stays readable.
 */
export function operationFunctionName(operationId: string | undefined, method: string, path: string): string {
  if (operationId !== undefined && operationId.trim() !== '') return toFunctionName(operationId);
  const words = [method.toLowerCase(), ...path.split(URL_PUNCTUATION)].filter((word) => word !== '');
  return toFunctionName(words.join('_'));
}

/** `name` shortened so that `name_suffix` fits in 64 characters. */
function withSuffix(name: string, suffix: string): string {
  const room = FUNCTION_NAME_MAX_LENGTH - suffix.length - 1;
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
