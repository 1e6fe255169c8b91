/**
 * A task's vault, sealed to and opened within that task: the binding text is computed here from the
 * typed task (the protocol's `taskBinding`), so the assembler, the gateway and the executors cannot
 * disagree on what a vault is bound to.
 */
import { taskBinding, type BoundTask } from '@agentmesh/protocol';
import {
  openVault,
  sealVault,
  type ClearVaultShape,
  type SealedVaultShape,
  type SealFor,
  type VaultKeyring,
} from './seal.js';

/** A task carrying its sealed vault: the shape of an assembled task on the bus. */
export type SealedTask = BoundTask & {
  runtime_config: BoundTask['runtime_config'] & { vault: SealedVaultShape };
};

/** `task` with `vault` sealed for the executors and bound to everything else of the task. */
export function sealTask(task: BoundTask, vault: ClearVaultShape, to: SealFor): SealedTask {
  const sealed = sealVault(vault, taskBinding(task), to);
  return { ...task, runtime_config: { ...task.runtime_config, vault: sealed } };
}

/**
 * Opens the vault a task carries, within that task only. Throws VaultTamperedError when the task is not
 * the one the vault was sealed for (re-targeted, replayed into another account, altered) and
 * VaultKeyUnknownError when no key of `keyring` has the vault's key id.
 */
export function openTaskVault(task: SealedTask, keyring: VaultKeyring): ClearVaultShape {
  return openVault(task.runtime_config.vault, taskBinding(task), keyring);
}
