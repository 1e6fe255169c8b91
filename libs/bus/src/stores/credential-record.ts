/**
 * One stored credential of KV `mesh_credentials`: its key (`<account>.<user>.<name>`, user and name
 * base64url-encoded) and the encrypted envelope stored under it, whose additional data is that key.
 * {@link CredentialStore} writes this layout and the assembler's in-memory copy reads it.
 */
import { decryptSecret, type EncryptedSecret, type MasterKey } from '@agentmesh/vault';
import { z } from 'zod';
import { decodeJson } from '../json.js';
import { encodeKeySegment } from '../kv-keys.js';

export const StoredSecret = z.object({
  v: z.literal(1),
  kid: z.string(),
  iv: z.string(),
  ct: z.string(),
  tag: z.string(),
}) satisfies z.ZodType<EncryptedSecret>;

export function credentialKey(accountId: string, userId: string, name: string): string {
  return `${accountId}.${encodeKeySegment(userId)}.${encodeKeySegment(name)}`;
}

/** The envelope stored under `key`, parsed (still encrypted). */
export function decodeStoredSecret(key: string, data: Uint8Array): EncryptedSecret {
  return decodeJson(StoredSecret, data, `mesh_credentials/${key}`);
}

/** The clear value of an envelope stored under `key`. */
export function openStoredSecret(key: string, secret: EncryptedSecret, keys: readonly MasterKey[]): string {
  return decryptSecret(secret, key, keys);
}
