// The credential vault of a task (seed 001 `runtime_config.vault`). In clear it exists only at the edges: the
// trusted upstream's submission and the executor's memory after unsealing. On the bus it is always sealed.
// The cryptography lives in the services; this module fixes the shapes both sides agree on.
import { z } from 'zod';

/** Credential name → secret value, e.g. `{ "QCC_KEY": "sk-..." }`. Never logged. */
export const ClearVault = z.record(z.string().min(1), z.string());
export type ClearVault = z.infer<typeof ClearVault>;

/**
 * The vault entry that carries the model's API key on the bus: `model.api_key` is moved into the vault before
 * sealing, because the assembled task must never hold a key in clear.
 */
export const MODEL_API_KEY_VAULT_ENTRY = '__model_api_key';

/**
 * The vault entry of a model's key: the first model's is MODEL_API_KEY_VAULT_ENTRY, fallback number i
 * (1-based, `runtime_config.fallback_models[i - 1]`) has `__model_api_key_<i>`.
 */
export function modelApiKeyVaultEntry(index: number): string {
  return index === 0 ? MODEL_API_KEY_VAULT_ENTRY : `${MODEL_API_KEY_VAULT_ENTRY}_${index}`;
}

/** Names starting with this are the mesh's own vault entries; upstream credentials may not use it. */
export const RESERVED_VAULT_ENTRY_PREFIX = '__';

export const SEALED_VAULT_ALGORITHM = 'X25519-HKDF-SHA256-A256GCM';

const Base64Url = z.base64url().min(1);

/**
 * A vault sealed for the executors: the JSON of a ClearVault encrypted with AES-256-GCM under a key derived by
 * HKDF-SHA256 from an X25519 exchange between a fresh ephemeral key (`epk`) and the executors' key `kid`.
 * The additional authenticated data is the task's trace_id, so a sealed vault cannot be replayed into
 * another task. Strict: nothing else may ride along next to the ciphertext.
 */
export const SealedVault = z.strictObject({
  v: z.literal(1),
  alg: z.literal(SEALED_VAULT_ALGORITHM),
  /** Id of the executors' key pair, for rotation. */
  kid: z.string().min(1).max(128),
  /** Ephemeral public key. */
  epk: Base64Url,
  iv: Base64Url,
  ct: Base64Url,
  tag: Base64Url,
});
export type SealedVault = z.infer<typeof SealedVault>;
