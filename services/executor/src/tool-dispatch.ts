/**
 * Sends each tool call to the runner for its tool type: HTTP tools run blind from their definition (seed
 * 000) with the task's opened vault; dynamic tools (seed 004) go to the tool box proxy with the task's
 * account; native tools (seed 002) run in this executor's code; script tools (seed 003) in the sandboxed
 * script runner. A tool this executor cannot run is a tool error the model can answer around, never a
 * failed task.
 */
import { ErrorCode, type ClearVault, type NativeTool, type ScriptTool } from '@agentmesh/protocol';
import type { ToolExecutor } from './agent-loop.js';
import type { NativeToolRegistry, ScriptTools } from './native-tools/index.js';
import { toolFailure, type DynamicToolRunner, type HttpToolRunner, type TaskAccount } from './tools/index.js';

export interface ToolRunners {
  readonly http: HttpToolRunner;
  readonly dynamic: DynamicToolRunner;
  readonly native: NativeToolRegistry;
  /** Absent when this executor has no scripts directory. */
  readonly scripts?: ScriptTools;
}

/** What the tools of one task get from the task. */
export interface TaskToolContext {
  readonly vault: ClearVault;
  readonly account: TaskAccount;
}

export function toolExecutor(runners: ToolRunners, task: TaskToolContext): ToolExecutor {
  return async (tool, args, { callId, signal }) => {
    switch (tool.type) {
      case 'HTTP':
        return runners.http.run(tool, args, { vault: task.vault, signal });
      case 'DYNAMIC':
        return runners.dynamic.run(tool, args, { account: task.account, signal });
      case 'NATIVE': {
        const native = runners.native.get(tool.class_name);
        if (native === undefined) return nativeUnavailable(tool);
        return native.run(args, { callId, signal, account: task.account });
      }
      case 'SCRIPT':
        if (runners.scripts === undefined) return scriptsUnavailable(tool);
        return runners.scripts.runTool(tool, args, { signal });
    }
  };
}

function nativeUnavailable(tool: NativeTool) {
  return toolFailure(
    ErrorCode.NOT_FOUND,
    `native tool ${tool.name} is unavailable (no running executor provides it); answer without it`,
    { class_name: tool.class_name },
  );
}

function scriptsUnavailable(tool: ScriptTool) {
  return toolFailure(
    ErrorCode.NOT_FOUND,
    `script tool ${tool.name} is unavailable (this executor has no scripts directory); answer without it`,
    { tool_id: tool.tool_id },
  );
}
