/**
 * One `tools/call` of an agent tool: the task is submitted exactly as `POST /v1/tasks` submits it (the
 * same validation, rate limits, running-task caps and trace id), its events are followed the way an SSE
 * stream follows them (the live feed, or JetStream), each one the caller would watch goes out as MCP
 * progress when the client asked for progress, and the terminal event becomes the result: the answer as
 * text, or `isError` with the error's code and message. When the caller ends the call before its task
 * (`notifications/cancelled`, or its connection closes), the task is cancelled as
 * `POST /v1/tasks/:trace_id/cancel` would, since nobody is left to receive its answer. A gateway stopping
 * under the call cancels nothing (as for every other route): the call answers where the task runs on.
 */
import { TaskEventsExpiredError, type AgentStore, type TaskStatusStore } from '@agentmesh/bus';
import { ErrorCode, formatWorkflowRef, isTerminalEvent, type TerminalEvent } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';
import { McpError, ErrorCode as McpErrorCode, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AccountCaller } from '../auth.js';
import { InvalidRequest, Rejection } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import type { LiveEventFeed } from '../live-event-feed.js';
import type { TaskCanceller } from '../task-cancellation.js';
import { followTaskEventFrames } from '../task-event-follower.js';
import type { TaskSubmitter } from '../task-submission.js';
import { AgentToolArguments, DEFAULT_MCP_USER_ID, agentOfTool } from './agent-tools.js';
import { eventOfFrame } from '../task-event-objects.js';
import { progressMessage } from './task-progress.js';

export interface AgentCallDeps {
  agents: AgentStore;
  submitter: TaskSubmitter;
  canceller: TaskCanceller;
  statuses: TaskStatusStore;
  js: JetStreamClient;
  liveEvents: LiveEventFeed | undefined;
  /** A call follows its task's events like an SSE stream, so it holds one of the same slots. */
  slots: EventStreamSlots;
  log: Logger;
}

export interface AgentCall {
  caller: AccountCaller;
  toolName: string;
  arguments: unknown;
  /** Sends one progress notification; undefined when the client sent no progress token. */
  sendProgress: ((progress: number, message: string) => Promise<void>) | undefined;
  /** The client cancelled the call (`notifications/cancelled`). */
  cancelled: AbortSignal;
  /** The connection the call's answer would go back on closed. */
  disconnected: AbortSignal;
  /** The gateway is stopping. */
  stopping: AbortSignal;
}

/** `structuredContent` of an agent tool's result. */
export interface AgentCallOutcome {
  trace_id?: string;
  answer?: string;
  error?: { code: string; message: string; retryable: boolean; detail?: unknown };
}

/** Runs the call to its result; an unknown tool is an MCP error (InvalidParams), as the spec asks. */
export async function runAgentCall(deps: AgentCallDeps, call: AgentCall): Promise<CallToolResult> {
  const { caller } = call;
  const agent = await agentOfTool(deps.agents, caller.accountId, call.toolName);
  if (agent === undefined) throw new McpError(McpErrorCode.InvalidParams, `Unknown tool: ${call.toolName}`);
  const args = AgentToolArguments.safeParse(call.arguments ?? {});
  if (!args.success) return rejected(undefined, InvalidRequest.fromZod(args.error, 'arguments'));

  const slot = deps.slots.take(eventStreamCaller(caller, caller.accountId));
  if (slot instanceof Rejection) return rejected(undefined, slot);
  try {
    const accepted = await deps.submitter.submit(
      {
        workflow_id: formatWorkflowRef({ workflow_id: agent.workflow_id, version: args.data.version }),
        user_id: args.data.user ?? DEFAULT_MCP_USER_ID,
        messages: [{ role: 'user', content: args.data.message }],
        ...(args.data.variables === undefined ? {} : { variables: args.data.variables }),
      },
      caller,
    );
    if (accepted instanceof Rejection) return rejected(undefined, accepted);
    const traceId = accepted.reply.trace_id;
    await call.sendProgress?.(0, `task ${traceId} queued`).catch(() => undefined);
    return await followToResult(deps, call, traceId);
  } finally {
    slot.release();
  }
}

async function followToResult(
  deps: AgentCallDeps,
  call: AgentCall,
  traceId: string,
): Promise<CallToolResult> {
  const { accountId } = call.caller;
  const calledOff = AbortSignal.any([call.cancelled, call.disconnected, call.stopping]);
  let terminal: TerminalEvent | undefined;
  try {
    for await (const frame of followTaskEventFrames({
      js: deps.js,
      feed: deps.liveEvents,
      accountId,
      traceId,
      afterSeq: 0,
      signal: calledOff,
      statuses: deps.statuses,
    })) {
      const event = eventOfFrame(frame);
      if (isTerminalEvent(event)) {
        terminal = event;
        break;
      }
      const message = call.sendProgress && progressMessage(event);
      // A notification that cannot go out (the stream closed) is the disconnect's to handle.
      if (message) await call.sendProgress?.(event.seq, message).catch(() => undefined);
    }
  } catch (error) {
    if (!(error instanceof TaskEventsExpiredError)) {
      deps.log.error({ err: error, trace_id: traceId }, 'mcp agent call could not follow its task');
    }
    return unfollowable(traceId);
  }

  if (terminal === undefined) {
    // The follower only ends early when told to stop.
    if (!calledOff.aborted) return unfollowable(traceId);
    return call.stopping.aborted ? leftRunning(deps, traceId) : cancelTask(deps, call, traceId);
  }
  deps.log.info({ trace_id: traceId, outcome: terminal.type }, 'mcp agent call ended');
  if (terminal.type === 'done') {
    return {
      content: [{ type: 'text', text: terminal.data.message }],
      structuredContent: { trace_id: traceId, answer: terminal.data.message } satisfies AgentCallOutcome,
    };
  }
  return failed(traceId, terminal.data);
}

/** The caller ended the call before its task: the task is cancelled, since nobody is left to receive its answer. */
async function cancelTask(deps: AgentCallDeps, call: AgentCall, traceId: string): Promise<CallToolResult> {
  const reason = call.cancelled.aborted
    ? 'the MCP client cancelled the call'
    : "the MCP call's connection closed";
  const cancelled = await deps.canceller
    .cancel(traceId, call.caller.accountId, reason)
    .catch((error: unknown) => {
      deps.log.error({ err: error, trace_id: traceId }, 'mcp agent call could not cancel its task');
      return undefined;
    });
  // A task that ended just now cannot be cancelled (409): nothing is lost either way.
  deps.log.info(
    {
      trace_id: traceId,
      reason,
      cancel_refused: cancelled instanceof Rejection ? cancelled.code : undefined,
    },
    'mcp agent call cancelled its task',
  );
  return failed(traceId, { code: ErrorCode.CANCELLED, message: reason, retryable: false });
}

/**
 * The gateway stops under the call: the task is left running, as the rest of the gateway leaves tasks
 * (a rolling restart cancels nothing); the caller learns where to find it.
 */
function leftRunning(deps: AgentCallDeps, traceId: string): CallToolResult {
  deps.log.info({ trace_id: traceId }, 'mcp agent call ended by the gateway stopping; its task runs on');
  return failed(traceId, {
    code: ErrorCode.SERVICE_UNAVAILABLE,
    message: `the gateway stopped during the call; task ${traceId} runs on: see GET /v1/tasks/${traceId}`,
    // Calling again would run the task a second time.
    retryable: false,
  });
}

function unfollowable(traceId: string): CallToolResult {
  return failed(traceId, {
    code: ErrorCode.SERVICE_UNAVAILABLE,
    message: `the events of task ${traceId} cannot be read right now; it may still run: see GET /v1/tasks/${traceId}`,
    retryable: true,
  });
}

function rejected(traceId: string | undefined, rejection: Rejection): CallToolResult {
  return failed(traceId, {
    code: rejection.code,
    message: rejection.message,
    retryable: rejection.retryable,
    ...(rejection.detail === undefined ? {} : { detail: rejection.detail }),
  });
}

function failed(traceId: string | undefined, error: NonNullable<AgentCallOutcome['error']>): CallToolResult {
  const outcome: AgentCallOutcome = {
    ...(traceId === undefined ? {} : { trace_id: traceId }),
    error: {
      code: error.code,
      message: error.message,
      retryable: error.retryable,
      ...(error.detail === undefined ? {} : { detail: error.detail }),
    },
  };
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.code}: ${error.message}` }],
    structuredContent: { ...outcome },
  };
}
