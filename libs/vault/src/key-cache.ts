/**
 * Key objects made once per key rather than once per vault: node:crypto parses a key's DER into a
 * KeyObject on every createPublicKey/createPrivateKey, and sealing or opening a vault needs the same
 * executors' key each time. Public keys are memoised by their material (a bounded map: a process seals
 * for one key, two during a rotation); private keys by the keyring that holds them (a WeakMap, so they
 * live no longer than the keyring), re-created when the keyring's value for a key id changes.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { importVaultPrivateKey, importVaultPublicKey } from './keys.js';

/** An X25519 key as sealing and opening use it: the key object and the raw public key bytes. */
export interface PreparedPublicKey {
  readonly key: KeyObject;
  /** Raw 32-byte public key (part of the HKDF salt). */
  readonly raw: Buffer;
}

export interface PreparedPrivateKey {
  readonly key: KeyObject;
  /** Raw 32-byte public key of this private key. */
  readonly publicRaw: Buffer;
}

/** Recipient keys a process keeps; more than a handful only when keys are rotated again and again. */
const MAX_PUBLIC_KEYS = 16;
const publicKeys = new Map<string, PreparedPublicKey>();

/** The executors' public key (raw X25519, base64url) as a key object; invalid material throws. */
export function preparedPublicKey(encoded: string): PreparedPublicKey {
  const known = publicKeys.get(encoded);
  if (known !== undefined) return known;
  const key = importVaultPublicKey(encoded);
  const prepared = { key, raw: rawPublic(key) };
  if (publicKeys.size >= MAX_PUBLIC_KEYS) publicKeys.delete(publicKeys.keys().next().value!);
  publicKeys.set(encoded, prepared);
  return prepared;
}

interface KeyringEntry extends PreparedPrivateKey {
  /** The material it was made from: a keyring that now holds another value for the id gets a new one. */
  readonly encoded: string;
}

const keyringKeys = new WeakMap<ReadonlyMap<string, string>, Map<string, KeyringEntry>>();

/** The private key a keyring holds under `kid`, made once; undefined when the keyring has no such id. */
export function preparedPrivateKey(
  keyring: ReadonlyMap<string, string>,
  kid: string,
): PreparedPrivateKey | undefined {
  const encoded = keyring.get(kid);
  if (encoded === undefined) return undefined;
  let entries = keyringKeys.get(keyring);
  if (entries === undefined) {
    entries = new Map();
    keyringKeys.set(keyring, entries);
  }
  const known = entries.get(kid);
  if (known !== undefined && known.encoded === encoded) return known;
  const key = importVaultPrivateKey(encoded);
  const entry = { encoded, key, publicRaw: rawPublic(createPublicKey(key)) };
  entries.set(kid, entry);
  return entry;
}

export function rawPublic(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
}
