// Seed 002 native tools of the executor: the framework (zod-defined tools, their registry, the provider
// announcements in `mesh_native_providers`, which carry the definitions the assembler mirrors into the
// registry) and the tools it ships:
// `recall_actions` (seed 004) and `execute_script` (seed 003's generic script tool), plus the runner of
// canonical SCRIPT tools that shares the script sandbox with it.
export { defineNativeTool, nativeToolParameters } from './native-tool.js';
export type { NativeToolContext, NativeToolImplementation, NativeToolSpec } from './native-tool.js';
export { NativeToolRegistry } from './native-tool-registry.js';
export { NativeProviderAnnouncer, nativeToolProviders } from './native-providers.js';
export type { NativeProviderAnnouncerOptions } from './native-providers.js';
export {
  recallActionsTool,
  RecallActionsInput,
  RECALL_ACTIONS_CLASS,
  DEFAULT_ACCOUNT_TYPE,
} from './recall-actions.js';
export type { RecallActionsOptions } from './recall-actions.js';
export { executeScriptTool, EXECUTE_SCRIPT_CLASS } from '../script/execute-script.js';
export { ScriptTools, ExecuteScriptInput, GENERIC_SCRIPT_SERVICE } from '../script/script-tools.js';
export type { ScriptToolsOptions, ScriptCallContext } from '../script/script-tools.js';
