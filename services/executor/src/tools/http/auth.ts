// Seed 000 auth mapping: takes the credentials a tool's `auth_config` names from the task's vault and puts
// them into the request. api_key/bearer/basic are applied here; oauth2 yields the client credentials the runner
// trades for an access token. Every header this adds is marked as a credential header (dropped on cross-origin
// redirects), and everything derived from a secret is reported so the runner can scrub it from results.
import type { AuthConfig, AuthMapping, ClearVault, OAuth2ClientCredentials } from '@agentmesh/protocol';
import { authCredentialSources } from '@agentmesh/protocol';
import type { HttpRequestPlan } from './request-plan.js';
import { CredentialsMissingError } from '../tool-errors.js';

export interface OAuth2Client {
  readonly config: OAuth2ClientCredentials;
  readonly clientId: string;
  readonly clientSecret: string;
}

export interface ResolvedAuth {
  readonly headers: Readonly<Record<string, string>>;
  readonly query: ReadonlyArray<readonly [string, string]>;
  /** Present for oauth2: the runner still has to fetch a token and send it as a bearer token. */
  readonly oauth2?: OAuth2Client;
  /** Values derived from secrets (e.g. the Basic credential) that must be scrubbed like vault values. */
  readonly derivedSecrets: readonly string[];
}

const NO_AUTH: ResolvedAuth = { headers: {}, query: [], derivedSecrets: [] };

/** Reads the auth config's credentials from the vault; all missing names are reported at once. */
export function resolveAuth(auth: AuthConfig | undefined, vault: ClearVault): ResolvedAuth {
  if (auth === undefined) return NO_AUTH;
  const missing = authCredentialSources(auth).filter((name) => !vault[name]);
  if (missing.length > 0) throw new CredentialsMissingError(missing);
  const credential = (name: string): string => vault[name] ?? '';

  const headers: Record<string, string> = {};
  const query: Array<[string, string]> = [];
  for (const entry of mappingOf(auth)) {
    if (entry.location === 'header') headers[entry.target.toLowerCase()] = credential(entry.source);
    else query.push([entry.target, credential(entry.source)]);
  }

  if (auth.type === 'bearer') {
    headers.authorization = `Bearer ${credential(auth.token_source)}`;
  } else if (auth.type === 'basic') {
    const basic = Buffer.from(`${credential(auth.username_source)}:${credential(auth.password_source)}`);
    const encoded = basic.toString('base64');
    headers.authorization = `Basic ${encoded}`;
    return { headers, query, derivedSecrets: [encoded] };
  } else if (auth.type === 'oauth2') {
    const oauth2 = {
      config: auth.oauth2,
      clientId: credential(auth.oauth2.client_id_source),
      clientSecret: credential(auth.oauth2.client_secret_source),
    };
    return { headers, query, oauth2, derivedSecrets: [] };
  }
  return { headers, query, derivedSecrets: [] };
}

/** The plan with the auth's headers and query parameters added; auth headers win over argument headers. */
export function withAuth(plan: HttpRequestPlan, auth: ResolvedAuth, bearerToken?: string): HttpRequestPlan {
  const url = new URL(plan.url);
  for (const [name, value] of auth.query) url.searchParams.append(name, value);
  const headers = { ...plan.headers, ...auth.headers };
  if (bearerToken !== undefined) headers.authorization = `Bearer ${bearerToken}`;
  const credentialHeaders = new Set([...plan.credentialHeaders, ...Object.keys(auth.headers)]);
  if (bearerToken !== undefined) credentialHeaders.add('authorization');
  return { ...plan, url, headers, credentialHeaders };
}

function mappingOf(auth: AuthConfig): readonly AuthMapping[] {
  return auth.mapping ?? [];
}
