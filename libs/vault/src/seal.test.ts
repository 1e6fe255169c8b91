import { describe, expect, it } from 'vitest';
import { VaultKeyInvalidError, VaultKeyUnknownError, VaultTamperedError } from './errors.js';
import { generateVaultKeyPair } from './keys.js';
import { openVault, sealVault } from './seal.js';

const bindingA = '{"scheme":"agentmesh/task-binding/v1","task_meta":{"account_id":"acme"}}';
const bindingB = '{"scheme":"agentmesh/task-binding/v1","task_meta":{"account_id":"globex"}}';
const canary = 'sk-canary-7d2c9e41';

describe('sealVault / openVault', () => {
  const current = generateVaultKeyPair('k2');
  const keyring = new Map([[current.kid, current.privateKey]]);

  it('a vault sealed for the executors opens with their key for the same task', () => {
    const sealed = sealVault({ QCC_KEY: canary, QCC_SECRET: 'x' }, bindingA, current);
    expect(sealed.kid).toBe('k2');
    expect(JSON.stringify(sealed)).not.toContain(canary);
    expect(openVault(sealed, bindingA, keyring)).toEqual({ QCC_KEY: canary, QCC_SECRET: 'x' });
  });

  it('two seals of the same vault differ (fresh ephemeral key and iv each time)', () => {
    const one = sealVault({ K: canary }, bindingA, current);
    const two = sealVault({ K: canary }, bindingA, current);
    expect(one.epk).not.toBe(two.epk);
    expect(one.ct).not.toBe(two.ct);
  });

  it('when a sealed vault is replayed into another task, it does not open', () => {
    const sealed = sealVault({ K: canary }, bindingA, current);
    expect(() => openVault(sealed, bindingB, keyring)).toThrow(VaultTamperedError);
  });

  it('when one byte of the ciphertext changes, it does not open', () => {
    const sealed = sealVault({ K: canary }, bindingA, current);
    const ct = Buffer.from(sealed.ct, 'base64url');
    ct[0] = ct[0]! ^ 1;
    expect(() => openVault({ ...sealed, ct: ct.toString('base64url') }, bindingA, keyring)).toThrow(
      VaultTamperedError,
    );
  });

  it('when the key id is unknown, the error names the id and says a retry may help', () => {
    const other = generateVaultKeyPair('k9');
    const sealed = sealVault({ K: canary }, bindingA, other);
    const error = (() => {
      try {
        openVault(sealed, bindingA, keyring);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(VaultKeyUnknownError);
    expect((error as VaultKeyUnknownError).message).toContain('k9');
    expect((error as VaultKeyUnknownError).retryable).toBe(true);
  });

  it('during a key rotation, executors holding old and new keys open vaults sealed for either', () => {
    const previous = generateVaultKeyPair('k1');
    const rotating = new Map([
      [previous.kid, previous.privateKey],
      [current.kid, current.privateKey],
    ]);
    expect(openVault(sealVault({ K: 'old' }, bindingA, previous), bindingA, rotating)).toEqual({ K: 'old' });
    expect(openVault(sealVault({ K: 'new' }, bindingA, current), bindingA, rotating)).toEqual({ K: 'new' });
  });

  it('when the key id says k2 but the vault was sealed for another key pair, it does not open', () => {
    const impostor = generateVaultKeyPair('k2');
    const sealed = sealVault({ K: canary }, bindingA, impostor);
    expect(() => openVault(sealed, bindingA, keyring)).toThrow(VaultTamperedError);
  });

  it('a malformed public key is refused with a clear error', () => {
    expect(() => sealVault({}, bindingA, { kid: 'k', publicKey: 'not-a-key' })).toThrow(VaultKeyInvalidError);
  });
});
