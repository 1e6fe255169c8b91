import { describe, expect, it } from 'vitest';
import { isSecretKey, REDACTED, redactSecrets } from './redaction.js';

describe('redactSecrets', () => {
  it('replaces secret-named values at any depth and keeps everything else', () => {
    const input = {
      trace_id: 't1',
      a: { b: { c: { d: { runtime_config: { model: { api_key: 'k', model_name: 'm' } } } } } },
      list: [{ Authorization: 'Bearer x', ok: 1 }],
    };
    expect(redactSecrets(input)).toEqual({
      trace_id: 't1',
      a: { b: { c: { d: { runtime_config: { model: { api_key: REDACTED, model_name: 'm' } } } } } },
      list: [{ Authorization: REDACTED, ok: 1 }],
    });
  });

  it('treats names case-insensitively and ignores dashes and underscores', () => {
    for (const key of ['API-KEY', 'apiKey', 'X-Api-Key', 'Client_Secret', 'clientSecret', 'TOKEN', 'Vault']) {
      expect(isSecretKey(key), key).toBe(true);
    }
    for (const key of ['tokens_used', 'model_name', 'keyword', 'usage']) {
      expect(isSecretKey(key), key).toBe(false);
    }
  });

  it('when an object refers to itself, redaction terminates', () => {
    const loop: Record<string, unknown> = { name: 'x' };
    loop.self = loop;
    expect(redactSecrets(loop)).toEqual({ name: 'x', self: '[…]' });
  });
});
