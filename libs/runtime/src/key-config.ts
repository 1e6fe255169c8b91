/**
 * The config parsers of the mesh's keys, one copy for every service and command that reads them (the
 * gateway, the assembler, the `rekey-credentials` command): the credentials master key and its id, the
 * older master keys of a rotation, and the executors' vault public key. Here, next to the config
 * helpers, because each is a zod schema over an environment variable; the key formats themselves (and
 * the X25519 check) stay in @agentmesh/vault. No error message repeats a key: a bad entry of a list is
 * named by its position.
 */
import { importVaultPublicKey, type MasterKey } from '@agentmesh/vault';
import { z } from 'zod';

const KEY_ID = /^[A-Za-z0-9._-]{1,128}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

function isMasterKeyMaterial(value: string): boolean {
  return BASE64.test(value) && Buffer.from(value, 'base64').length === 32;
}

function isVaultPublicKey(value: string): boolean {
  try {
    importVaultPublicKey(value);
    return true;
  } catch {
    return false;
  }
}

/** A key id (master key or vault key pair), as recorded with what it encrypted. */
export const keyIdSchema = z
  .string()
  .regex(KEY_ID, 'must be 1-128 characters of A-Z, a-z, 0-9, ".", "_" or "-"');

/** A credentials master key: 32 bytes in base64. */
export const masterKeySchema = z
  .string()
  .refine(isMasterKeyMaterial, 'must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)');

/**
 * `kid:base64,kid:base64` → master keys. `atLeastOne`: a list naming none is refused (a command that
 * needs the old keys), rather than read as "no older keys".
 */
export function masterKeyListSchema({ atLeastOne = false }: { atLeastOne?: boolean } = {}) {
  return z.string().transform((raw, ctx): MasterKey[] => {
    const keys: MasterKey[] = [];
    raw
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '')
      .forEach((entry, index) => {
        const colon = entry.indexOf(':');
        const kid = colon < 0 ? '' : entry.slice(0, colon);
        const key = colon < 0 ? '' : entry.slice(colon + 1);
        if (!KEY_ID.test(kid) || !isMasterKeyMaterial(key)) {
          ctx.addIssue({
            code: 'custom',
            message: `entry ${index + 1} must be kid:base64 with a 32-byte key (key ids: A-Z a-z 0-9 . _ -)`,
          });
          return;
        }
        keys.push({ kid, key });
      });
    if (atLeastOne && keys.length === 0) ctx.addIssue({ code: 'custom', message: 'names no key' });
    return keys;
  });
}

/** The executors' vault public key: a raw X25519 key in base64url. */
export const vaultPublicKeySchema = z
  .string()
  .refine(isVaultPublicKey, 'must be a raw 32-byte X25519 public key in base64url (43 characters)');
