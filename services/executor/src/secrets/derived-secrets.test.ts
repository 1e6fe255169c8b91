import type { HttpTool } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { searchTool } from '../__fixtures__/tasks.js';
import { derivedSecrets } from './derived-secrets.js';
import { SecretScrubber } from './secret-scrubber.js';

const vault = { USER: 'svc-user', PASS: 'p@ss word+1', CID: 'client 1', CSECRET: 's3cr3t/&=' };

function withAuth(auth: HttpTool['auth']): HttpTool {
  return { ...searchTool('http://127.0.0.1:1'), auth };
}

describe('derivedSecrets', () => {
  it('when a model key entry holds AWS credentials (Bedrock), the key id, secret and session token are each a secret', () => {
    const aws = {
      access_key_id: 'AKIAEXAMPLE1',
      secret_access_key: 'wJalr/secret',
      session_token: 'IQoJtoken',
    };
    const derived = derivedSecrets([], {
      __model_api_key_1: JSON.stringify(aws),
      __model_api_key: 'sk-plain',
      OTHER: JSON.stringify(aws),
    });
    expect(derived).toEqual(['AKIAEXAMPLE1', 'wJalr/secret', 'IQoJtoken']);
    const scrubber = new SecretScrubber(derived);
    expect(scrubber.scrub('denied for AKIAEXAMPLE1 (wJalr/secret)')).not.toMatch(/AKIAEXAMPLE1|wJalr/);
  });

  it('when a tool uses Basic auth, the user:password pair and its base64 are secrets from the start', () => {
    const derived = derivedSecrets(
      [withAuth({ type: 'basic', username_source: 'USER', password_source: 'PASS' })],
      vault,
    );
    const pair = 'svc-user:p@ss word+1';

    expect(derived).toEqual([pair, Buffer.from(pair).toString('base64')]);
    const scrubber = new SecretScrubber(derived);
    expect(scrubber.scrub(`Authorization: Basic ${Buffer.from(pair).toString('base64')}`)).toBe(
      'Authorization: Basic [REDACTED]',
    );
  });

  it('when a tool uses OAuth2, the form-encoded client pair it authenticates with and its base64 are secrets', () => {
    const auth = {
      type: 'oauth2' as const,
      oauth2: {
        token_url: 'http://127.0.0.1:1/token',
        client_id_source: 'CID',
        client_secret_source: 'CSECRET',
      },
    };
    const pair = 'client+1:s3cr3t%2F%26%3D';

    expect(derivedSecrets([withAuth(auth)], vault)).toEqual([Buffer.from(pair).toString('base64'), pair]);
  });

  it('when a tool has no auth, or its credentials are missing, nothing is derived', () => {
    expect(derivedSecrets([searchTool('http://127.0.0.1:1')], vault)).toEqual([]);
    expect(
      derivedSecrets([withAuth({ type: 'basic', username_source: 'USER', password_source: 'NOPE' })], vault),
    ).toEqual([]);
  });
});
