import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret } from './at-rest.js';
import { VaultKeyInvalidError, VaultKeyUnknownError, VaultTamperedError } from './errors.js';

const master = { kid: 'm1', key: randomBytes(32).toString('base64') };
const canary = 'canary-credential-91ab';

describe('credentials at rest', () => {
  it('a credential encrypted for a record decrypts for that record only', () => {
    const stored = encryptSecret(canary, 'acme/u1/QCC_KEY', master);
    expect(JSON.stringify(stored)).not.toContain(canary);
    expect(decryptSecret(stored, 'acme/u1/QCC_KEY', [master])).toBe(canary);
    expect(() => decryptSecret(stored, 'acme/u2/QCC_KEY', [master])).toThrow(VaultTamperedError);
  });

  it('when the master key rotated, ciphertexts under the old key still decrypt while it is configured', () => {
    const next = { kid: 'm2', key: randomBytes(32).toString('base64') };
    const old = encryptSecret(canary, 'a/u/K', master);
    expect(decryptSecret(old, 'a/u/K', [next, master])).toBe(canary);
    expect(() => decryptSecret(old, 'a/u/K', [next])).toThrow(VaultKeyUnknownError);
  });

  it('a master key of the wrong length is refused', () => {
    expect(() => encryptSecret('x', 'a', { kid: 'short', key: randomBytes(16).toString('base64') })).toThrow(
      VaultKeyInvalidError,
    );
  });
});

describe('master key objects', () => {
  it('when a master key object is given new material, the new material encrypts and the old ciphertext no longer decrypts', () => {
    const changing = { kid: 'm1', key: randomBytes(32).toString('base64') };
    const old = encryptSecret(canary, 'a/u/K', changing);
    expect(decryptSecret(old, 'a/u/K', [changing])).toBe(canary);
    changing.key = randomBytes(32).toString('base64');
    expect(() => decryptSecret(old, 'a/u/K', [changing])).toThrow(VaultTamperedError);
    expect(decryptSecret(encryptSecret(canary, 'a/u/K', changing), 'a/u/K', [changing])).toBe(canary);
  });
});
