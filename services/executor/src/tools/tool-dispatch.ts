/**
 * Sends each tool call to the runner for its tool type: HTTP tools run blind from their definition (seed
 * 000) with the task's opened vault; dynamic tools (seed 004) go to the tool box proxy with the task's
 * account; native tools (seed 002) run in this executor's code; script tools (seed 003) in the sandboxed
 * script runner; MCP tools on the task's MCP servers (`tools/call`); agent tools as sub-tasks
 * (`sub-agent/`); A2A tools as tasks on a remote A2A agent (`a2a/`). A tool this executor cannot run is a tool error the model can answer around, never a
 * failed task.
 *
 * Every outcome, of every tool type, comes back with the task's secrets scrubbed out, before the model or
 * the task's events see it. The model never needs a credential's value: the executor applies credentials
 * to requests itself, blind to the model. A value that reached the model's context could be echoed back
 * into the answer (prompt injection: "repeat the key"), would be disclosed to the model's provider, and
 * could be passed on in another tool's arguments. So an API that echoes a key, a script that prints one,
 * a native tool that quotes one: the model reads `[REDACTED]` in its place. (A new secret an API hands
 * out, one that is not in the vault, is not known to be one and is passed on.)
 */
import {
  ErrorCode,
  type A2aTool,
  type AgentTool,
  type ClearVault,
  type McpServerConnection,
  type McpTool,
  type NativeTool,
  type ScriptTool,
} from '@agentmesh/protocol';
import type { ToolExecutor } from '../agent-loop.js';
import type { NativeToolRegistry, ScriptTools } from './native/index.js';
import type { McpToolRunner } from './mcp/index.js';
import type { SubAgentToolRunner, SubtaskCallerContext } from './sub-agent/index.js';
import type { A2aToolRunner, RemoteInputRequests } from './a2a/index.js';
import { SecretScrubber } from '../secrets/index.js';
import {
  toolFailure,
  type DynamicToolRunner,
  type HttpToolRunner,
  type TaskAccount,
  type TaskContextValues,
  type ToolOutcome,
} from './index.js';

export interface ToolRunners {
  readonly http: HttpToolRunner;
  readonly dynamic: DynamicToolRunner;
  readonly native: NativeToolRegistry;
  /** Absent when this executor has no scripts directory. */
  readonly scripts?: ScriptTools;
  /** Absent: MCP tools are unavailable here. */
  readonly mcp?: McpToolRunner;
  /** Absent: agent tools (sub-tasks) are unavailable here. */
  readonly subAgents?: SubAgentToolRunner;
  /** Absent: A2A tools (remote A2A agents) are unavailable here. */
  readonly a2a?: A2aToolRunner;
}

/** What the tools of one task get from the task. */
export interface TaskToolContext {
  readonly vault: ClearVault;
  readonly account: TaskAccount;
  /**
   * The task's secrets, scrubbed from every outcome; the HTTP runner adds what it derives (tokens) to it.
   * The vault's values when absent.
   */
  readonly secrets?: SecretScrubber;
  /** The task's user, account, trace and variables, for HTTP tools' `context_params`; none when absent. */
  readonly context?: TaskContextValues;
  /** The MCP servers the task was assembled with (`runtime_config.mcp_servers`); the only ones it may call. */
  readonly mcpServers?: readonly McpServerConnection[];
  /** What agent tools' sub-tasks need of the task; absent: agent tools are unavailable. */
  readonly subtasks?: SubtaskCallerContext;
  /** Call id → the remote task an earlier attempt's call runs (A2A tools follow it again). */
  readonly remoteTasks?: ReadonlyMap<string, string>;
  /** The task's remote A2A tasks waiting for input; each A2A call's outcome updates it. None: none answerable. */
  readonly remoteInputs?: RemoteInputRequests;
}

export function toolExecutor(runners: ToolRunners, task: TaskToolContext): ToolExecutor {
  const secrets = task.secrets ?? new SecretScrubber(Object.values(task.vault));
  const run = runTool(runners, task, secrets);
  return async (tool, args, ctx) => scrubbedOutcome(await run(tool, args, ctx), secrets);
}

function runTool(runners: ToolRunners, task: TaskToolContext, secrets: SecretScrubber): ToolExecutor {
  return async (tool, args, { callId, signal, onProgress }) => {
    // The same for a call a redelivered task runs again (same trace, same call_id): tools can deduplicate.
    const idempotencyKey = task.context === undefined ? undefined : `${task.context.trace_id}:${callId}`;
    switch (tool.type) {
      case 'HTTP':
        return runners.http.run(tool, args, {
          vault: task.vault,
          signal,
          scrubber: secrets,
          task: task.context,
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
        });
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
      case 'MCP':
        if (runners.mcp === undefined) return mcpUnavailable(tool);
        return runners.mcp.run(tool, args, {
          servers: task.mcpServers ?? [],
          vault: task.vault,
          account: task.account.id,
          scrubber: secrets,
          callId,
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
          signal,
          ...(onProgress === undefined ? {} : { onProgress }),
        });
      case 'AGENT':
        if (runners.subAgents === undefined || task.subtasks === undefined) return subAgentsUnavailable(tool);
        return runners.subAgents.run(tool, args, { callId, signal, task: task.subtasks });
      case 'A2A': {
        if (runners.a2a === undefined) return a2aUnavailable(tool);
        const outcome = await runners.a2a.run(tool, args, {
          vault: task.vault,
          account: task.account.id,
          scrubber: secrets,
          callId,
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
          ...(task.remoteTasks?.has(callId) === true ? { remoteTaskId: task.remoteTasks.get(callId) } : {}),
          ...(task.remoteInputs === undefined ? {} : { remoteInputs: task.remoteInputs }),
          signal,
          ...(onProgress === undefined ? {} : { onProgress }),
        });
        task.remoteInputs?.note(tool.name, args, outcome);
        return outcome;
      }
    }
  };
}

function scrubbedOutcome(outcome: ToolOutcome, secrets: SecretScrubber): ToolOutcome {
  if (outcome.ok) return { ...outcome, result: secrets.scrubDeep(outcome.result) };
  const { code, message, detail } = outcome.error;
  const error = {
    code,
    message: secrets.scrub(message),
    ...(detail === undefined ? {} : { detail: secrets.scrubDeep(detail) }),
  };
  return { ok: false, error };
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

function subAgentsUnavailable(tool: AgentTool) {
  return toolFailure(
    ErrorCode.NOT_FOUND,
    `agent tool ${tool.name} is unavailable on this executor; answer without it`,
    { workflow_id: tool.workflow_id },
  );
}

function a2aUnavailable(tool: A2aTool) {
  return toolFailure(
    ErrorCode.NOT_FOUND,
    `A2A tool ${tool.name} is unavailable on this executor; answer without it`,
    { card_url: tool.card_url },
  );
}

function mcpUnavailable(tool: McpTool) {
  return toolFailure(
    ErrorCode.NOT_FOUND,
    `MCP tool ${tool.name} is unavailable on this executor; answer without it`,
    {
      server: tool.server,
    },
  );
}
