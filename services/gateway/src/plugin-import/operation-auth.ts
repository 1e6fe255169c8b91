/**
 * Which credentials an imported operation sends: its security requirements (alternatives, each a set of
 * schemes that all apply) turned into one seed 000 `auth` config. The first alternative the mesh can
 * express wins, in the document's order of preference: API keys (header or query) combine with each
 * other and with at most one bearer, basic or OAuth2 client-credentials scheme (as its extra `mapping`).
 * An operation none of whose alternatives can be expressed is imported without auth, with a warning.
 */
import { authCredentialSources, AuthConfig, type AuthMapping } from '@agentmesh/protocol';
import type { SecuritySchemeSummary } from '@agentmesh/openapi';

export interface OperationAuth {
  auth?: AuthConfig;
  required_credentials?: string[];
  /** Why the operation's security could not be expressed (it is imported without auth). */
  warning?: string;
}

type SecurityRequirements = ReadonlyArray<Readonly<Record<string, readonly string[]>>> | undefined;

export function operationAuth(
  security: SecurityRequirements,
  schemes: ReadonlyMap<string, SecuritySchemeSummary>,
): OperationAuth {
  if (security === undefined || security.length === 0) return {};
  const problems: string[] = [];
  let optional = false;
  for (const requirement of security) {
    const names = Object.keys(requirement);
    if (names.length === 0) {
      // `{}` among the alternatives: the operation may also be called anonymously.
      optional = true;
      continue;
    }
    const combined = combine(names, schemes);
    if (typeof combined === 'string') problems.push(combined);
    else return { auth: combined, required_credentials: authCredentialSources(combined) };
  }
  if (optional) return {};
  return { warning: `imported without auth: ${problems.join('; ')}` };
}

/** One alternative (schemes that all apply) as one auth config, or why it cannot be one. */
function combine(names: string[], schemes: ReadonlyMap<string, SecuritySchemeSummary>): AuthConfig | string {
  const mappings: AuthMapping[] = [];
  let primary: AuthConfig | undefined;
  for (const name of names) {
    const scheme = schemes.get(name);
    if (!scheme) return `security scheme ${name} is not declared`;
    const parsed = AuthConfig.safeParse(scheme.authConfig);
    if (!parsed.success)
      return `${name}: ${scheme.unsupportedReason ?? 'cannot be expressed as auth_config'}`;
    if (parsed.data.type === 'api_key') mappings.push(...parsed.data.mapping);
    else if (primary === undefined) primary = parsed.data;
    else return `${names.join(' + ')}: only one bearer, basic or OAuth2 scheme can apply at once`;
  }
  if (primary === undefined) return { type: 'api_key', mapping: mappings };
  return mappings.length === 0 ? primary : { ...primary, mapping: [...(primary.mapping ?? []), ...mappings] };
}
