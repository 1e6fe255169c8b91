// Which vault entries a tool needs before a task may run (seed 000 `required_credentials`, checked by the
// assembler): the declared list plus every source its auth config reads.
import type { ToolDefinition } from './canonical.js';
import { authCredentialSources } from './http-auth.js';
import { a2aToolCredentials } from './a2a-tool.js';

export function requiredCredentials(tool: ToolDefinition): string[] {
  if (tool.type === 'A2A') return a2aToolCredentials(tool);
  if (tool.type !== 'HTTP') return [];
  const fromAuth = tool.auth === undefined ? [] : authCredentialSources(tool.auth);
  return [...new Set([...(tool.required_credentials ?? []), ...fromAuth])];
}
