export { decryptSecret, encryptSecret } from './at-rest.js';
export type { EncryptedSecret, MasterKey } from './at-rest.js';
export { VaultKeyInvalidError, VaultKeyUnknownError, VaultTamperedError } from './errors.js';
export { generateVaultKeyPair, importVaultPrivateKey, importVaultPublicKey } from './keys.js';
export type { VaultKeyPair } from './keys.js';
export { openVault, sealVault, VAULT_ALGORITHM } from './seal.js';
export type { ClearVaultShape, SealedVaultShape, SealFor, VaultKeyring } from './seal.js';
export { openTaskVault, sealTask } from './task-vault.js';
export type { SealedTask } from './task-vault.js';
