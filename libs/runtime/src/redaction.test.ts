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

  it('when a NATS login is logged (the config variables or nats.js options), every secret of it is withheld', () => {
    const config = {
      NATS_URL: 'nats://gateway:s3cret-pw@127.0.0.1:4222',
      NATS_USER: 'gateway',
      NATS_PASSWORD: 's3cret-pw',
      NATS_TOKEN: 's3cret-token',
      NATS_NKEY_SEED: 'SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4',
      NATS_CREDS_FILE: '/run/secrets/gateway.creds',
      connect: { user: 'gateway', pass: 's3cret-pw', auth_token: 's3cret-token' },
    };
    const logged = JSON.stringify(redactSecrets(config));
    for (const secret of ['s3cret-pw', 's3cret-token', config.NATS_NKEY_SEED])
      expect(logged).not.toContain(secret);
    // Names and paths are not secrets.
    expect(logged).toContain('/run/secrets/gateway.creds');
    expect(logged).toContain('"NATS_USER":"gateway"');
  });

  it('when an object refers to itself, redaction terminates', () => {
    const loop: Record<string, unknown> = { name: 'x' };
    loop.self = loop;
    expect(redactSecrets(loop)).toEqual({ name: 'x', self: '[…]' });
  });
});

describe('redactSecrets on URLs', () => {
  it('when a URL with a stream token or key in its query is logged, the values are withheld and the rest kept', () => {
    const logged = redactSecrets({
      url: '/v1/tasks/abc/events?token=eyJhIjoiYWNtZSJ9.c2lnbmF0dXJl&last_event_id=3',
      nested: { target: 'https://h.example/x?api_key=k-123#frag', other: 'a=b&token=t2' },
      plain: 'no query here',
    });
    expect(logged).toEqual({
      url: '/v1/tasks/abc/events?token=[redacted]&last_event_id=3',
      nested: { target: 'https://h.example/x?api_key=[redacted]#frag', other: 'a=b&token=[redacted]' },
      plain: 'no query here',
    });
    expect(JSON.stringify(logged)).not.toContain('c2lnbmF0dXJl');
  });
});
