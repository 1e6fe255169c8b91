/**
 * Vault errors. Each is one condition, carries a protocol error code and says whether retrying can
 * help. None ever carries a secret in its message or detail.
 */

/** The sealed vault names a key id this process holds no private key for (rotation lag or misrouting). */
export class VaultKeyUnknownError extends Error {
  override readonly name = 'VaultKeyUnknownError';
  readonly code = 'INTERNAL';
  readonly retryable = true;

  constructor(readonly kid: string) {
    super(`no vault key with id "${kid}" is configured`);
  }
}

/**
 * The ciphertext does not authenticate: it was altered, sealed for another task (the task's binding is
 * the additional data, so any re-targeting lands here) or for another key.
 */
export class VaultTamperedError extends Error {
  override readonly name = 'VaultTamperedError';
  readonly code = 'TASK_BINDING_MISMATCH';
  readonly retryable = false;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A key given in configuration is not usable (wrong length, wrong type, not base64). */
export class VaultKeyInvalidError extends Error {
  override readonly name = 'VaultKeyInvalidError';
  readonly code = 'INVALID_REQUEST';
  readonly retryable = false;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
