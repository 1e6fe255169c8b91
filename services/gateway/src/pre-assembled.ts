/**
 * RuoYi mode (seed 001): a trusted upstream submits the whole runtime config with its vault in clear.
 * Here it becomes the bus form: tools converted to canonical definitions, the model's api_key moved
 * into the vault under MODEL_API_KEY_VAULT_ENTRY, and the vault sealed for the executors, bound to the
 * whole task (account, user, trace, workflow, input, limits, model endpoint, tools) exactly as the
 * assembler binds the vaults it seals: a copy of this task re-targeted anywhere opens nothing. The
 * clear vault exists only in this process's memory.
 */
import {
  BoundTask,
  fromPayloadTool,
  MODEL_API_KEY_VAULT_ENTRY,
  type AssembledModelConfig,
  type ClearRuntimeConfig,
  type ClearVault,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { sealTask, type SealedTask, type SealFor } from '@agentmesh/vault';
import type { z } from 'zod';

/** A runtime config converted to the bus form, waiting for its task to be sealed into. */
export interface UnsealedRuntimeConfig {
  model: AssembledModelConfig;
  tools: ToolDefinition[];
  dynamic_tool_sources?: string[];
  /** Never logged. */
  vault: ClearVault;
}

export function convertRuntimeConfig(config: ClearRuntimeConfig): UnsealedRuntimeConfig {
  const { api_key: apiKey, ...model } = config.model;
  return {
    model,
    tools: config.tools.map(fromPayloadTool),
    ...(config.dynamic_tool_sources === undefined
      ? {}
      : { dynamic_tool_sources: config.dynamic_tool_sources }),
    vault:
      apiKey === undefined ? { ...config.vault } : { ...config.vault, [MODEL_API_KEY_VAULT_ENTRY]: apiKey },
  };
}

/**
 * The task with its vault sealed, or why its parts do not form a valid task. The parts are parsed with
 * the bus schemas first (limits get their defaults here, not later), so the binding is computed over the
 * very values every later reader parses.
 */
export function sealPreAssembledTask(
  parts: { task_meta: unknown; input: unknown; limits: unknown },
  config: UnsealedRuntimeConfig,
  recipient: SealFor,
): { ok: true; task: SealedTask } | { ok: false; error: z.ZodError } {
  const { vault, ...runtimeConfig } = config;
  const parsed = BoundTask.safeParse({
    task_meta: parts.task_meta,
    input: parts.input,
    runtime_config: runtimeConfig,
    limits: parts.limits ?? {},
  });
  if (!parsed.success) return { ok: false, error: parsed.error };
  return { ok: true, task: sealTask(parsed.data, vault, recipient) };
}
