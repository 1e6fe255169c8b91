// What a running executor says about the native tools it provides, in KV `mesh_native_providers` under
// `<class_name>.<instance>`: the class, who provides it, when it said so, and the definitions of the tools
// the class implements (code is their source of truth, seed 002). The assembler mirrors those definitions
// into the shared catalogue of `mesh_tools`; executors themselves cannot write the registry.
import { z } from 'zod';
import { IsoDateTime } from './ids.js';
import { NativeTool, type ToolDefinition } from './tools/canonical.js';

/** Class names are one KV key token. */
export const NATIVE_CLASS_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;

export const NativeProviderAnnouncement = z.object({
  class_name: z.string().regex(NATIVE_CLASS_NAME_PATTERN),
  executor_id: z.string().min(1).max(256),
  announced_at: IsoDateTime,
  /** The tools this class implements; each one's `class_name` is the announcement's. */
  tools: z.array(NativeTool).max(64).default([]),
});
export type NativeProviderAnnouncement = z.infer<typeof NativeProviderAnnouncement>;

/**
 * The native class of `execute_script`. An executor provides it exactly when it has a scripts directory,
 * which is also what running a SCRIPT tool takes, so a SCRIPT tool needs an executor providing it.
 */
export const SCRIPT_RUNNER_CLASS = 'ExecuteScriptTool';

/**
 * The native classes an executor must provide to run every one of a task's tools, sorted, each once: a
 * NATIVE tool's class, and SCRIPT_RUNNER_CLASS for a SCRIPT tool.
 */
export function nativeClassesOf(tools: readonly ToolDefinition[]): string[] {
  const classes = new Set<string>();
  for (const tool of tools) {
    if (tool.type === 'NATIVE') classes.add(tool.class_name);
    else if (tool.type === 'SCRIPT') classes.add(SCRIPT_RUNNER_CLASS);
  }
  return [...classes].sort();
}
