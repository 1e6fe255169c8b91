/**
 * Sealing a task's vault for the executors, so that no credential crosses the bus in clear.
 *
 * ECIES over X25519: a fresh ephemeral key pair per vault; the shared secret with the executors' public
 * key goes through HKDF-SHA256 (salt = ephemeral public key ‖ recipient public key, info names the
 * scheme and key id) to an AES-256-GCM key. The additional authenticated data is the SHA-256 digest of
 * the task's binding (the protocol's `taskBinding`: account, user, trace, workflow, input, limits, model
 * endpoint, tools with their targets and auth mappings), so a sealed vault opens only inside the exact
 * task it was sealed for; a copy re-targeted at another account or URL does not open. `kid` names the
 * executors' key pair so keys can rotate: executors keep old private keys until no task sealed for them
 * remains.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
} from 'node:crypto';
import { VaultKeyUnknownError, VaultTamperedError } from './errors.js';
import { preparedPrivateKey, preparedPublicKey, rawPublic } from './key-cache.js';
import { importVaultPublicKey } from './keys.js';

export const VAULT_ALGORITHM = 'X25519-HKDF-SHA256-A256GCM';

/** The sealed form of a vault as it travels on the bus (mirrors `SealedVault` of the protocol). */
export interface SealedVaultShape {
  v: 1;
  alg: typeof VAULT_ALGORITHM;
  kid: string;
  epk: string;
  iv: string;
  ct: string;
  tag: string;
}

export type ClearVaultShape = Record<string, string>;

export interface SealFor {
  kid: string;
  /** the executors' raw X25519 public key, base64url */
  publicKey: string;
}

function deriveKey(shared: Buffer, epk: Buffer, recipient: Buffer, kid: string): Buffer {
  const salt = Buffer.concat([epk, recipient]);
  const info = Buffer.from(`agentmesh/vault/v1/${kid}`);
  return Buffer.from(hkdfSync('sha256', shared, salt, info, 32));
}

/** The additional authenticated data for a binding text: its digest, a fixed 32 bytes however large the task. */
function bindingAad(binding: string): Buffer {
  return createHash('sha256').update(binding, 'utf8').digest();
}

/** Seals `vault` for the executors' key, bound to the task whose binding text is `binding`. */
export function sealVault(vault: ClearVaultShape, binding: string, to: SealFor): SealedVaultShape {
  const recipient = preparedPublicKey(to.publicKey);
  const ephemeral = generateKeyPairSync('x25519');
  const shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipient.key });
  const epk = rawPublic(ephemeral.publicKey);
  const key = deriveKey(shared, epk, recipient.raw, to.kid);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(bindingAad(binding));
  const ct = Buffer.concat([cipher.update(JSON.stringify(vault), 'utf8'), cipher.final()]);
  return {
    v: 1,
    alg: VAULT_ALGORITHM,
    kid: to.kid,
    epk: epk.toString('base64url'),
    iv: iv.toString('base64url'),
    ct: ct.toString('base64url'),
    tag: cipher.getAuthTag().toString('base64url'),
  };
}

/** Private keys by key id, as an executor holds them. */
export type VaultKeyring = ReadonlyMap<string, string>;

/**
 * Opens a vault inside the task whose binding text is `binding`; a vault sealed for any other task, or
 * altered, throws {@link VaultTamperedError}.
 */
export function openVault(sealed: SealedVaultShape, binding: string, keyring: VaultKeyring): ClearVaultShape {
  const own = preparedPrivateKey(keyring, sealed.kid);
  if (own === undefined) throw new VaultKeyUnknownError(sealed.kid);
  let plain: string;
  try {
    const epk = importVaultPublicKey(sealed.epk);
    const shared = diffieHellman({ privateKey: own.key, publicKey: epk });
    const key = deriveKey(shared, Buffer.from(sealed.epk, 'base64url'), own.publicRaw, sealed.kid);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64url'));
    decipher.setAAD(bindingAad(binding));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
    plain = Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  } catch (error) {
    throw new VaultTamperedError('the sealed vault does not open for this task and key', { cause: error });
  }
  const parsed: unknown = JSON.parse(plain);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new VaultTamperedError('the sealed vault does not hold a credential map');
  }
  return parsed as ClearVaultShape;
}
