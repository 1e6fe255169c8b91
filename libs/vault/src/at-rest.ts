/**
 * Credentials encrypted at rest (KV `mesh_credentials`): AES-256-GCM under a 32-byte master key, with
 * the record's identity (account, user, credential name) as additional data so that a ciphertext moved
 * to another record does not decrypt. The master key id travels with each ciphertext for rotation.
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { VaultKeyInvalidError, VaultKeyUnknownError, VaultTamperedError } from './errors.js';

export interface EncryptedSecret {
  v: 1;
  kid: string;
  iv: string;
  ct: string;
  tag: string;
}

export interface MasterKey {
  kid: string;
  /** 32 random bytes, base64 or base64url */
  key: string;
}

/** The key object of each master key, made once (remembered with the material it was made from). */
const secretKeys = new WeakMap<MasterKey, { material: string; key: KeyObject }>();

function secretKey(master: MasterKey): KeyObject {
  const known = secretKeys.get(master);
  if (known !== undefined && known.material === master.key) return known.key;
  const bytes = Buffer.from(master.key, 'base64');
  if (bytes.length !== 32) {
    throw new VaultKeyInvalidError(
      `master key "${master.kid}" must be 32 bytes in base64 (got ${bytes.length})`,
    );
  }
  const key = createSecretKey(bytes);
  secretKeys.set(master, { material: master.key, key });
  return key;
}

export function encryptSecret(value: string, aad: string, master: MasterKey): EncryptedSecret {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secretKey(master), iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return {
    v: 1,
    kid: master.kid,
    iv: iv.toString('base64url'),
    ct: ct.toString('base64url'),
    tag: cipher.getAuthTag().toString('base64url'),
  };
}

export function decryptSecret(secret: EncryptedSecret, aad: string, masters: readonly MasterKey[]): string {
  const master = masters.find((m) => m.kid === secret.kid);
  if (!master) throw new VaultKeyUnknownError(secret.kid);
  try {
    const decipher = createDecipheriv('aes-256-gcm', secretKey(master), Buffer.from(secret.iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(Buffer.from(secret.tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(secret.ct, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  } catch (error) {
    if (error instanceof VaultKeyInvalidError) throw error;
    throw new VaultTamperedError('the stored credential does not decrypt for this record and key', {
      cause: error,
    });
  }
}
