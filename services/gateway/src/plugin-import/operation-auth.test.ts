import { summariseSecuritySchemes } from '@agentmesh/openapi';
import { describe, expect, it } from 'vitest';
import { operationAuth } from './operation-auth.js';

const schemes = new Map(
  summariseSecuritySchemes(
    {
      openapi: '3.0.3',
      servers: [{ url: 'https://api.example.com' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
          tenant: { type: 'apiKey', in: 'query', name: 'tenant' },
          bearerAuth: { type: 'http', scheme: 'bearer' },
          basicAuth: { type: 'http', scheme: 'basic' },
          cookieKey: { type: 'apiKey', in: 'cookie', name: 'sid' },
          machine: {
            type: 'oauth2',
            flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: { read: 'read' } } },
          },
        },
      },
    },
    { credentialPrefix: 'EX_' },
  ).map((scheme) => [scheme.name, scheme]),
);

describe('operation auth from security requirements', () => {
  it('no requirements, or an empty list, is no auth and no warning', () => {
    expect(operationAuth(undefined, schemes)).toEqual({});
    expect(operationAuth([], schemes)).toEqual({});
  });

  it('an API key in a header becomes an api_key mapping reading a prefixed credential', () => {
    expect(operationAuth([{ apiKey: [] }], schemes)).toEqual({
      auth: { type: 'api_key', mapping: [{ source: 'EX_API_KEY', target: 'X-Api-Key', location: 'header' }] },
      required_credentials: ['EX_API_KEY'],
    });
  });

  it('schemes that apply together combine: two API keys, or a bearer token carrying an API key as its extra mapping', () => {
    expect(operationAuth([{ apiKey: [], tenant: [] }], schemes).auth).toEqual({
      type: 'api_key',
      mapping: [
        { source: 'EX_API_KEY', target: 'X-Api-Key', location: 'header' },
        { source: 'EX_TENANT', target: 'tenant', location: 'query' },
      ],
    });
    expect(operationAuth([{ tenant: [], bearerAuth: [] }], schemes)).toEqual({
      auth: {
        type: 'bearer',
        token_source: 'EX_BEARER_AUTH_TOKEN',
        mapping: [{ source: 'EX_TENANT', target: 'tenant', location: 'query' }],
      },
      required_credentials: ['EX_BEARER_AUTH_TOKEN', 'EX_TENANT'],
    });
  });

  it('an OAuth2 client-credentials flow gets its token URL resolved against the server', () => {
    expect(operationAuth([{ machine: ['read'] }], schemes).auth).toMatchObject({
      type: 'oauth2',
      oauth2: { token_url: 'https://api.example.com/oauth/token', client_id_source: 'EX_MACHINE_CLIENT_ID' },
    });
  });

  it("the first alternative that can be expressed wins, in the document's order", () => {
    expect(operationAuth([{ cookieKey: [] }, { basicAuth: [] }, { apiKey: [] }], schemes).auth?.type).toBe(
      'basic',
    );
  });

  it('when no alternative can be expressed the operation has no auth and a warning with every reason', () => {
    const outcome = operationAuth(
      [{ cookieKey: [] }, { bearerAuth: [], basicAuth: [] }, { missing: [] }],
      schemes,
    );
    expect(outcome.auth).toBeUndefined();
    expect(outcome.warning).toContain('cookie');
    expect(outcome.warning).toContain('only one bearer, basic or OAuth2 scheme');
    expect(outcome.warning).toContain('security scheme missing is not declared');
  });

  it('an anonymous alternative ({}) makes an inexpressible scheme optional: no auth, no warning', () => {
    expect(operationAuth([{ cookieKey: [] }, {}], schemes)).toEqual({});
    // ...but a usable scheme is still preferred over going anonymous.
    expect(operationAuth([{}, { apiKey: [] }], schemes).auth?.type).toBe('api_key');
  });
});
