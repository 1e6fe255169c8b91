// Seed 000 `auth_config`: how credentials from the task's vault are put into an HTTP request. Sources are
// credential names (vault keys), never values: a tool definition holds no secret.
//
// - api_key: each `mapping` entry puts vault[source] into header/query parameter `target`, as is.
// - bearer:  `Authorization: Bearer <vault[token_source]>`.
// - basic:   `Authorization: Basic base64(vault[username_source]:vault[password_source])`.
// - oauth2:  client-credentials grant against `oauth2.token_url` with the client id/secret taken from the vault
//            (sent with HTTP Basic unless `client_auth` is `body`), then `Authorization: Bearer <access_token>`.
// For bearer, basic and oauth2 an optional `mapping` adds further raw placements (an extra API key header, ...).
import { z } from 'zod';
import { HttpUrl } from './http-request.js';

export const AuthType = {
  API_KEY: 'api_key',
  BEARER: 'bearer',
  BASIC: 'basic',
  OAUTH2: 'oauth2',
} as const;
export type AuthType = (typeof AuthType)[keyof typeof AuthType];

export const CredentialName = z.string().min(1).max(256);

export const AuthLocation = z.enum(['header', 'query']);
export type AuthLocation = z.infer<typeof AuthLocation>;

export const AuthMapping = z.object({
  /** Credential name in the vault, e.g. `QCC_KEY`. */
  source: CredentialName,
  /** Header or query parameter name, e.g. `Token`. */
  target: z.string().min(1),
  location: AuthLocation,
});
export type AuthMapping = z.infer<typeof AuthMapping>;

export const ApiKeyAuth = z.object({
  type: z.literal(AuthType.API_KEY),
  mapping: z.array(AuthMapping).min(1),
});

export const BearerAuth = z.object({
  type: z.literal(AuthType.BEARER),
  token_source: CredentialName,
  mapping: z.array(AuthMapping).optional(),
});

export const BasicAuth = z.object({
  type: z.literal(AuthType.BASIC),
  username_source: CredentialName,
  password_source: CredentialName,
  mapping: z.array(AuthMapping).optional(),
});

export const OAuth2ClientCredentials = z.object({
  grant_type: z.literal('client_credentials').optional(),
  token_url: HttpUrl,
  client_id_source: CredentialName,
  client_secret_source: CredentialName,
  scopes: z.array(z.string().min(1)).optional(),
  audience: z.string().min(1).optional(),
  /** How the client authenticates to the token endpoint; HTTP Basic when absent (RFC 6749 §2.3.1). */
  client_auth: z.enum(['basic', 'body']).optional(),
});
export type OAuth2ClientCredentials = z.infer<typeof OAuth2ClientCredentials>;

export const OAuth2Auth = z.object({
  type: z.literal(AuthType.OAUTH2),
  oauth2: OAuth2ClientCredentials,
  mapping: z.array(AuthMapping).optional(),
});

export const AuthConfig = z.discriminatedUnion('type', [ApiKeyAuth, BearerAuth, BasicAuth, OAuth2Auth]);
export type AuthConfig = z.infer<typeof AuthConfig>;

/** Every credential name an auth config reads, in order of first use. */
export function authCredentialSources(auth: AuthConfig): string[] {
  const own: string[] = [];
  if (auth.type === 'bearer') own.push(auth.token_source);
  if (auth.type === 'basic') own.push(auth.username_source, auth.password_source);
  if (auth.type === 'oauth2') own.push(auth.oauth2.client_id_source, auth.oauth2.client_secret_source);
  return [...new Set([...own, ...(auth.mapping ?? []).map((entry) => entry.source)])];
}
