// A document's security schemes as data the gateway can turn into seed 000 `auth_config` entries:
// apiKey in a header or query → api_key mapping, http bearer → bearer, http basic → basic, oauth2 with a
// client-credentials flow → oauth2 (token URL + scopes). The suggested config uses seed 000 / protocol
// field names; credential names are proposals the caller may rename (the user stores those keys).

import { asNonEmptyString, asString, isJsonObject, type JsonObject } from './json.js';

export type SuggestedAuthConfig =
  | {
      readonly type: 'api_key';
      readonly mapping: Array<{ source: string; target: string; location: 'header' | 'query' }>;
    }
  | { readonly type: 'bearer'; readonly token_source: string }
  | { readonly type: 'basic'; readonly username_source: string; readonly password_source: string }
  | {
      readonly type: 'oauth2';
      readonly oauth2: {
        grant_type: 'client_credentials';
        token_url: string;
        client_id_source: string;
        client_secret_source: string;
        scopes: string[];
      };
    };

export interface SecuritySchemeSummary {
  /** The scheme's key in `components.securitySchemes` (what security requirements name). */
  readonly name: string;
  /** The OpenAPI scheme type (`apiKey`, `http`, `oauth2`, `openIdConnect`, `mutualTLS`). */
  readonly schemeType: string;
  readonly description: string | undefined;
  /** A seed 000 `auth_config` for the scheme, when seed 000 can express it. */
  readonly authConfig: SuggestedAuthConfig | undefined;
  /** Credential names the user has to store for `authConfig`. */
  readonly credentials: string[];
  /** Why `authConfig` is absent. */
  readonly unsupportedReason: string | undefined;
}

export interface SecuritySummaryOptions {
  /** Prepended to every proposed credential name, e.g. `GITHUB_`. */
  readonly credentialPrefix?: string;
}

export function summariseSecuritySchemes(
  document: unknown,
  options: SecuritySummaryOptions = {},
): SecuritySchemeSummary[] {
  if (!isJsonObject(document)) return [];
  const components = isJsonObject(document.components) ? document.components : {};
  const schemes = isJsonObject(components.securitySchemes) ? components.securitySchemes : {};
  const baseUrl = firstServerUrl(document);
  return Object.entries(schemes)
    .filter((entry): entry is [string, JsonObject] => isJsonObject(entry[1]))
    .map(([name, scheme]) =>
      summarise(name, scheme, credentialStem(options.credentialPrefix ?? '', name), baseUrl),
    );
}

function summarise(
  name: string,
  scheme: JsonObject,
  stem: string,
  baseUrl: string | undefined,
): SecuritySchemeSummary {
  const schemeType = asString(scheme.type) ?? 'unknown';
  const base = { name, schemeType, description: asString(scheme.description) };
  const unsupported = (reason: string): SecuritySchemeSummary => ({
    ...base,
    authConfig: undefined,
    credentials: [],
    unsupportedReason: reason,
  });
  const supported = (authConfig: SuggestedAuthConfig, credentials: string[]): SecuritySchemeSummary => ({
    ...base,
    authConfig,
    credentials,
    unsupportedReason: undefined,
  });

  if (schemeType === 'apiKey') {
    const target = asNonEmptyString(scheme.name);
    const location = scheme.in;
    if (target === undefined) return unsupported('the apiKey scheme names no parameter');
    if (location !== 'header' && location !== 'query') {
      return unsupported(
        `an apiKey in ${String(location)} cannot be mapped (seed 000 places keys in a header or query)`,
      );
    }
    return supported({ type: 'api_key', mapping: [{ source: stem, target, location }] }, [stem]);
  }
  if (schemeType === 'http') {
    const httpScheme = asString(scheme.scheme)?.toLowerCase();
    if (httpScheme === 'bearer')
      return supported({ type: 'bearer', token_source: `${stem}_TOKEN` }, [`${stem}_TOKEN`]);
    if (httpScheme === 'basic') {
      const [username, password] = [`${stem}_USERNAME`, `${stem}_PASSWORD`];
      return supported({ type: 'basic', username_source: username, password_source: password }, [
        username,
        password,
      ]);
    }
    return unsupported(`HTTP authentication scheme "${String(scheme.scheme)}" is not supported`);
  }
  if (schemeType === 'oauth2') {
    const flows = isJsonObject(scheme.flows) ? scheme.flows : {};
    const flow = isJsonObject(flows.clientCredentials) ? flows.clientCredentials : undefined;
    if (!flow) {
      const offered = Object.keys(flows).join(', ') || 'none';
      return unsupported(
        `only the OAuth2 clientCredentials flow can run without a user (offered: ${offered})`,
      );
    }
    const tokenUrl = absoluteUrl(asString(flow.tokenUrl), baseUrl);
    if (tokenUrl === undefined) return unsupported('the clientCredentials flow has no usable tokenUrl');
    const [clientId, clientSecret] = [`${stem}_CLIENT_ID`, `${stem}_CLIENT_SECRET`];
    return supported(
      {
        type: 'oauth2',
        oauth2: {
          grant_type: 'client_credentials',
          token_url: tokenUrl,
          client_id_source: clientId,
          client_secret_source: clientSecret,
          scopes: Object.keys(isJsonObject(flow.scopes) ? flow.scopes : {}),
        },
      },
      [clientId, clientSecret],
    );
  }
  return unsupported(`security scheme type "${schemeType}" is not supported`);
}

/** `bearerAuth` → `BEARER_AUTH`, `api-key` → `API_KEY`. */
function credentialStem(prefix: string, name: string): string {
  const snake = `${prefix}${name}`
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^a-zA-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toUpperCase();
  return snake || 'CREDENTIAL';
}

function firstServerUrl(document: JsonObject): string | undefined {
  const servers = Array.isArray(document.servers) ? document.servers : [];
  const first: unknown = servers[0];
  return isJsonObject(first) ? asString(first.url) : undefined;
}

function absoluteUrl(url: string | undefined, base: string | undefined): string | undefined {
  if (url === undefined || url === '') return undefined;
  try {
    return new URL(url, base).href;
  } catch {
    return undefined;
  }
}
