/**
 * RuoYi mode (seed 001): a trusted upstream submits the whole runtime config with its vault in clear.
 * Here it becomes the bus form: tools converted to canonical definitions, the model's api_key moved
 * into the vault under MODEL_API_KEY_VAULT_ENTRY, and the vault sealed for the executors with the
 * task's trace_id as additional data. The clear vault exists only in this process's memory.
 */
import {
  fromPayloadTool,
  MODEL_API_KEY_VAULT_ENTRY,
  type AssembledModelConfig,
  type AssembledRuntimeConfig,
  type ClearRuntimeConfig,
  type ClearVault,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { sealVault, type SealFor } from '@agentmesh/vault';

/** A runtime config converted to the bus form, waiting for its trace id to be sealed. */
export interface UnsealedRuntimeConfig {
  model: AssembledModelConfig;
  tools: ToolDefinition[];
  /** Never logged. */
  vault: ClearVault;
}

export function convertRuntimeConfig(config: ClearRuntimeConfig): UnsealedRuntimeConfig {
  const { api_key: apiKey, ...model } = config.model;
  return {
    model,
    tools: config.tools.map(fromPayloadTool),
    vault:
      apiKey === undefined ? { ...config.vault } : { ...config.vault, [MODEL_API_KEY_VAULT_ENTRY]: apiKey },
  };
}

export function sealRuntimeConfig(
  config: UnsealedRuntimeConfig,
  traceId: string,
  recipient: SealFor,
): AssembledRuntimeConfig {
  return { model: config.model, tools: config.tools, vault: sealVault(config.vault, traceId, recipient) };
}
