/**
 * X25519 key pairs for vault sealing, as they appear in configuration: raw 32-byte keys in base64url.
 * Executors hold private keys (one per key id, several during a rotation); assemblers and gateways hold
 * the public key of the current id.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { VaultKeyInvalidError } from './errors.js';

export interface VaultKeyPair {
  kid: string;
  /** raw X25519 public key, base64url */
  publicKey: string;
  /** raw X25519 private key, base64url */
  privateKey: string;
}

export function generateVaultKeyPair(kid: string): VaultKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  const jwk = privateKey.export({ format: 'jwk' });
  const pub = publicKey.export({ format: 'jwk' });
  return { kid, publicKey: pub.x!, privateKey: jwk.d! };
}

function rawKey(encoded: string, what: string): string {
  if (!/^[A-Za-z0-9_-]{43}$/.test(encoded)) {
    throw new VaultKeyInvalidError(`${what} must be a 32-byte X25519 key in base64url (43 characters)`);
  }
  return encoded;
}

// DER prefixes that wrap a raw 32-byte X25519 key into SPKI / PKCS#8 (RFC 8410).
const SPKI_X25519_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const PKCS8_X25519_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

export function importVaultPublicKey(encoded: string): KeyObject {
  const raw = Buffer.from(rawKey(encoded, 'public key'), 'base64url');
  try {
    return createPublicKey({ key: Buffer.concat([SPKI_X25519_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch (error) {
    throw new VaultKeyInvalidError('public key is not a valid X25519 key', { cause: error });
  }
}

export function importVaultPrivateKey(encoded: string): KeyObject {
  const raw = Buffer.from(rawKey(encoded, 'private key'), 'base64url');
  try {
    return createPrivateKey({ key: Buffer.concat([PKCS8_X25519_PREFIX, raw]), format: 'der', type: 'pkcs8' });
  } catch (error) {
    throw new VaultKeyInvalidError('private key is not a valid X25519 key', { cause: error });
  }
}
