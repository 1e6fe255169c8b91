/**
 * One stored credential of KV `mesh_credentials`: its key and the encrypted envelope stored under it, whose
 * additional data is that key. Two sets live side by side in an account:
 * - a user's own: `<account>.<user>.<name>`, user and name base64url-encoded;
 * - the account-wide set, serving every user of the account: `<account>.=account.<name>`.
 *
 * base64url (unpadded) never yields `=`, so no user id encodes to the account-wide segment and neither set
 * can be read, listed or overwritten through the other. {@link CredentialStore} writes this layout and the
 * assembler's in-memory copy reads it.
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

/** The key segment of the account-wide set, in the place of a user's; outside base64url's alphabet. */
export const ACCOUNT_WIDE_SEGMENT = '=account';

/** Whose set a credential belongs to: one user's, or the whole account's. */
export type CredentialOwner = { readonly userId: string } | 'account';

/** The key prefix of a set (without the trailing `.`). */
export function credentialSetPrefix(accountId: string, owner: CredentialOwner): string {
  return `${accountId}.${owner === 'account' ? ACCOUNT_WIDE_SEGMENT : encodeKeySegment(owner.userId)}`;
}

/** The key of a user's own credential. */
export function credentialKey(accountId: string, userId: string, name: string): string {
  return ownedCredentialKey(accountId, { userId }, name);
}

/** The key of an account-wide credential. */
export function accountCredentialKey(accountId: string, name: string): string {
  return ownedCredentialKey(accountId, 'account', name);
}

export function ownedCredentialKey(accountId: string, owner: CredentialOwner, name: string): string {
  return `${credentialSetPrefix(accountId, owner)}.${encodeKeySegment(name)}`;
}

/** The envelope stored under `key`, parsed (still encrypted). */
export function decodeStoredSecret(key: string, data: Uint8Array): EncryptedSecret {
  return decodeJson(StoredSecret, data, `mesh_credentials/${key}`);
}

/** The clear value of an envelope stored under `key`. */
export function openStoredSecret(key: string, secret: EncryptedSecret, keys: readonly MasterKey[]): string {
  return decryptSecret(secret, key, keys);
}
