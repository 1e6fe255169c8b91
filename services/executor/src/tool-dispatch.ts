/**
 * Sends each tool call to the runner for its tool type. HTTP tools run blind from their definition (seed
 * 000) with the task's opened vault; the other types have no runner in this executor yet, and the model
 * is told so as a tool error instead of the task failing.
 */
import { ErrorCode, type ClearVault } from '@agentmesh/protocol';
import type { ToolExecutor } from './agent-loop.js';
import { toolFailure, type HttpToolRunner } from './tools/index.js';

export function toolExecutor(runners: { http: HttpToolRunner }, vault: ClearVault): ToolExecutor {
  return async (tool, args, { signal }) => {
    switch (tool.type) {
      case 'HTTP':
        return runners.http.run(tool, args, { vault, signal });
      default:
        return toolFailure(
          ErrorCode.TOOL_ERROR,
          `${tool.name} is a ${tool.type} tool, which this executor cannot run yet; answer without it`,
        );
    }
  };
}
