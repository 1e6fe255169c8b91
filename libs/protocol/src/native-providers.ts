// What a running executor says about the native tools it provides, in KV `mesh_native_providers` under
// `<class_name>.<instance>`: the class, who provides it, when it said so, and the definitions of the tools
// the class implements (code is their source of truth, seed 002). The assembler mirrors those definitions
// into the shared catalogue of `mesh_plugins`; executors themselves cannot write the registry.
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

/** The native classes a task's tools need an executor to provide, sorted, each once. */
export function nativeClassesOf(tools: readonly ToolDefinition[]): string[] {
  const classes = new Set<string>();
  for (const tool of tools) if (tool.type === 'NATIVE') classes.add(tool.class_name);
  return [...classes].sort();
}
