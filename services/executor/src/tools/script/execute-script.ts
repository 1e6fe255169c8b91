/**
 * `execute_script`: seed 003's generic script tool (its `core:execute-python-script` example) as a native
 * tool. The model names a script under the executor's scripts directory; it runs in the script runner's
 * sandbox with `inputData` on stdin, and its JSON output comes back. Provided only by executors that have
 * a scripts directory configured.
 */
import { SCRIPT_RUNNER_CLASS } from '@agentmesh/protocol';
import { defineNativeTool, type NativeToolImplementation } from '../native/native-tool.js';
import { ExecuteScriptInput, type ScriptTools } from './script-tools.js';

/** The protocol's script runner class: tasks with SCRIPT tools are routed to executors providing it. */
export const EXECUTE_SCRIPT_CLASS = SCRIPT_RUNNER_CLASS;
const TOOL_ID = 'core:execute_script';

export function executeScriptTool(scripts: ScriptTools): NativeToolImplementation {
  return defineNativeTool({
    name: 'execute_script',
    className: EXECUTE_SCRIPT_CLASS,
    description:
      'Runs a Python or Node.js script from the scripts directory in a sandbox. The script receives ' +
      'inputData as JSON on stdin and must print one JSON object on stdout; the answer is ' +
      '{success, outputData, logs} or an error saying what went wrong (stderr included).',
    input: ExecuteScriptInput,
    run: (input, { signal }) => scripts.executeScript(TOOL_ID, input, { signal }),
  });
}
