import { describe, expect, it } from 'vitest';
import { VaultKeyInvalidError, VaultTamperedError } from './errors.js';
import { preparedPrivateKey, preparedPublicKey } from './key-cache.js';
import { generateVaultKeyPair } from './keys.js';
import { openVault, sealVault } from './seal.js';

const binding = '{"scheme":"agentmesh/task-binding/v1","task_meta":{"account_id":"acme"}}';

describe('vault key objects', () => {
  it('the executors’ public key is made into a key object once, however many SealFor objects name it', () => {
    const keys = generateVaultKeyPair('k1');
    const first = preparedPublicKey(keys.publicKey);
    sealVault({ K: 'v' }, binding, { kid: keys.kid, publicKey: keys.publicKey });
    sealVault({ K: 'v' }, binding, { kid: keys.kid, publicKey: keys.publicKey });
    expect(preparedPublicKey(keys.publicKey)).toBe(first);
    expect(first.raw.toString('base64url')).toBe(keys.publicKey);
  });

  it('a keyring makes each private key once, and a new value under a key id takes effect at once', () => {
    const before = generateVaultKeyPair('k1');
    const after = generateVaultKeyPair('k1');
    const keyring = new Map([[before.kid, before.privateKey]]);
    const sealedBefore = sealVault({ K: 'before' }, binding, before);
    expect(openVault(sealedBefore, binding, keyring)).toEqual({ K: 'before' });
    const made = preparedPrivateKey(keyring, 'k1');
    expect(made).toBeDefined();
    expect(openVault(sealedBefore, binding, keyring)).toEqual({ K: 'before' });
    expect(preparedPrivateKey(keyring, 'k1')).toBe(made);

    keyring.set('k1', after.privateKey);
    expect(preparedPrivateKey(keyring, 'k1')).not.toBe(made);
    expect(openVault(sealVault({ K: 'after' }, binding, after), binding, keyring)).toEqual({ K: 'after' });
    expect(() => openVault(sealedBefore, binding, keyring)).toThrow(VaultTamperedError);
  });

  it('two keyrings holding the same key id with different keys never share a key object', () => {
    const one = generateVaultKeyPair('k1');
    const two = generateVaultKeyPair('k1');
    const ringOne = new Map([[one.kid, one.privateKey]]);
    const ringTwo = new Map([[two.kid, two.privateKey]]);
    const sealed = sealVault({ K: 'one' }, binding, one);
    expect(openVault(sealed, binding, ringOne)).toEqual({ K: 'one' });
    expect(() => openVault(sealed, binding, ringTwo)).toThrow(VaultTamperedError);
    expect(preparedPrivateKey(ringOne, 'k1')).not.toBe(preparedPrivateKey(ringTwo, 'k1'));
  });

  it('a malformed public key is still refused every time, not remembered as usable', () => {
    for (let i = 0; i < 2; i++) {
      expect(() => sealVault({}, binding, { kid: 'k', publicKey: 'A'.repeat(42) })).toThrow(
        VaultKeyInvalidError,
      );
    }
  });
});
