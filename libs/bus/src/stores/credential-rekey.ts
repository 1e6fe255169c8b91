/**
 * Re-encrypts the credentials stored in KV `mesh_credentials` under the current master key (the second
 * step of a master key rotation; see the package README). Records already under the current key are left
 * alone, so a run can be repeated or resumed; a record that does not decrypt with any given key, or does
 * not parse, is reported and left exactly as it is, never deleted or overwritten. Each write is a
 * compare-and-set on the record's revision: a value stored meanwhile (under the current key, by the
 * gateway) is never overwritten with an older one.
 */
import { encryptSecret, VaultKeyUnknownError, type MasterKey } from '@agentmesh/vault';
import { JetStreamApiCodes } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { CorruptRecordError } from '../errors.js';
import { encodeJson } from '../json.js';
import { collect } from '../kv-keys.js';
import { decodeStoredSecret, openStoredSecret } from './credential-record.js';
import type { CredentialKeys } from './credential-store.js';
import { isJetStreamApiError } from '../jetstream-api-error.js';

const MAX_CAS_ATTEMPTS = 5;

/** Why a record was left as it was. */
export const CredentialRekeyProblem = {
  /** Encrypted under a key id none of the given keys has. */
  UNKNOWN_KEY: 'unknown_key',
  /** The key id is known but the ciphertext does not authenticate (altered, moved, or a wrong key). */
  DOES_NOT_DECRYPT: 'does_not_decrypt',
  /** Not a stored credential envelope at all. */
  CORRUPT: 'corrupt',
  /** Written by somebody else on every attempt. */
  KEPT_CHANGING: 'kept_changing',
} as const;
export type CredentialRekeyProblem = (typeof CredentialRekeyProblem)[keyof typeof CredentialRekeyProblem];

export interface CredentialRekeyReport {
  /** Records now under the current key that were under another one. */
  readonly rekeyed: number;
  /** Records found under the current key already. */
  readonly alreadyCurrent: number;
  /** Records left as they were, by KV key (identifiers only: account, encoded user and name). */
  readonly leftAsTheyWere: readonly { key: string; problem: CredentialRekeyProblem; kid?: string }[];
}

/** Re-encrypts every stored credential not under `keys.current`, decrypting with `keys.previous`. */
export async function rekeyCredentials(kv: KV, keys: CredentialKeys): Promise<CredentialRekeyReport> {
  const decryptKeys = [keys.current, ...(keys.previous ?? [])];
  let rekeyed = 0;
  let alreadyCurrent = 0;
  const leftAsTheyWere: { key: string; problem: CredentialRekeyProblem; kid?: string }[] = [];
  for (const key of (await collect(await kv.keys())).sort()) {
    const outcome = await rekeyOne(kv, key, keys, decryptKeys);
    if (outcome === 'rekeyed') rekeyed++;
    else if (outcome === 'current') alreadyCurrent++;
    else if (outcome !== 'gone') leftAsTheyWere.push({ key, ...outcome });
  }
  return { rekeyed, alreadyCurrent, leftAsTheyWere };
}

type RekeyOutcome = 'rekeyed' | 'current' | 'gone' | { problem: CredentialRekeyProblem; kid?: string };

async function rekeyOne(
  kv: KV,
  key: string,
  keys: CredentialKeys,
  decryptKeys: readonly MasterKey[],
): Promise<RekeyOutcome> {
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const entry = await kv.get(key);
    if (!entry || entry.operation !== 'PUT') return 'gone';
    let secret;
    try {
      secret = decodeStoredSecret(key, entry.value);
    } catch (error) {
      if (error instanceof CorruptRecordError) return { problem: CredentialRekeyProblem.CORRUPT };
      throw error;
    }
    if (secret.kid === keys.current.kid) return 'current';
    let value: string;
    try {
      value = openStoredSecret(key, secret, decryptKeys);
    } catch (error) {
      return {
        problem:
          error instanceof VaultKeyUnknownError
            ? CredentialRekeyProblem.UNKNOWN_KEY
            : CredentialRekeyProblem.DOES_NOT_DECRYPT,
        kid: secret.kid,
      };
    }
    try {
      await kv.update(key, encodeJson(encryptSecret(value, key, keys.current)), entry.revision);
      return 'rekeyed';
    } catch (error) {
      // Written meanwhile: look at the record again.
      if (!isJetStreamApiError(error, JetStreamApiCodes.StreamWrongLastSequence)) {
        throw error;
      }
    }
  }
  return { problem: CredentialRekeyProblem.KEPT_CHANGING };
}
