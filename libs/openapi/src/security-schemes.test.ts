// Security schemes → seed 000 auth_config suggestions for the gateway.

import { describe, expect, it } from 'vitest';
import { summariseSecuritySchemes } from './security-schemes.js';

describe('summariseSecuritySchemes', () => {
  it('when a document declares apiKey, bearer, basic and client-credentials schemes, each maps to a seed 000 auth_config', () => {
    const document = {
      openapi: '3.0.3',
      servers: [{ url: 'https://api.example.com/v1' }],
      components: {
        securitySchemes: {
          api_key: { type: 'apiKey', name: 'X-API-Key', in: 'header' },
          queryKey: { type: 'apiKey', name: 'key', in: 'query' },
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          basic: { type: 'http', scheme: 'Basic' },
          machine: {
            type: 'oauth2',
            flows: {
              authorizationCode: {
                authorizationUrl: 'https://x/auth',
                tokenUrl: 'https://x/token',
                scopes: {},
              },
              clientCredentials: {
                tokenUrl: '/oauth/token',
                scopes: { 'read:all': 'read', 'write:all': 'write' },
              },
            },
          },
        },
      },
    };
    const summary = summariseSecuritySchemes(document, { credentialPrefix: 'acme ' });
    expect(summary.map((s) => [s.name, s.authConfig, s.credentials])).toEqual([
      [
        'api_key',
        { type: 'api_key', mapping: [{ source: 'ACME_API_KEY', target: 'X-API-Key', location: 'header' }] },
        ['ACME_API_KEY'],
      ],
      [
        'queryKey',
        { type: 'api_key', mapping: [{ source: 'ACME_QUERY_KEY', target: 'key', location: 'query' }] },
        ['ACME_QUERY_KEY'],
      ],
      ['bearerAuth', { type: 'bearer', token_source: 'ACME_BEARER_AUTH_TOKEN' }, ['ACME_BEARER_AUTH_TOKEN']],
      [
        'basic',
        { type: 'basic', username_source: 'ACME_BASIC_USERNAME', password_source: 'ACME_BASIC_PASSWORD' },
        ['ACME_BASIC_USERNAME', 'ACME_BASIC_PASSWORD'],
      ],
      [
        'machine',
        {
          type: 'oauth2',
          oauth2: {
            grant_type: 'client_credentials',
            token_url: 'https://api.example.com/oauth/token',
            client_id_source: 'ACME_MACHINE_CLIENT_ID',
            client_secret_source: 'ACME_MACHINE_CLIENT_SECRET',
            scopes: ['read:all', 'write:all'],
          },
        },
        ['ACME_MACHINE_CLIENT_ID', 'ACME_MACHINE_CLIENT_SECRET'],
      ],
    ]);
  });

  it('when a scheme cannot run unattended or be placed (user OAuth flow, cookie key, OpenID), it says why', () => {
    const summary = summariseSecuritySchemes({
      components: {
        securitySchemes: {
          user: { type: 'oauth2', flows: { implicit: { authorizationUrl: 'https://x', scopes: {} } } },
          cookieKey: { type: 'apiKey', name: 'sid', in: 'cookie' },
          oidc: { type: 'openIdConnect', openIdConnectUrl: 'https://x/.well-known' },
          digest: { type: 'http', scheme: 'digest' },
        },
      },
    });
    expect(summary.map((s) => [s.name, s.authConfig, s.unsupportedReason])).toEqual([
      [
        'user',
        undefined,
        'only the OAuth2 clientCredentials flow can run without a user (offered: implicit)',
      ],
      [
        'cookieKey',
        undefined,
        'an apiKey in cookie cannot be mapped (seed 000 places keys in a header or query)',
      ],
      ['oidc', undefined, 'security scheme type "openIdConnect" is not supported'],
      ['digest', undefined, 'HTTP authentication scheme "digest" is not supported'],
    ]);
  });
});
