/**
 * Where a redelivered task picks up: the conversation its earlier attempts built, rebuilt from the task's
 * own events (pure; the runner reads the log, the agent loop runs from the result).
 *
 * A model turn is answered once its `tool_start`s were written: its assistant message is the text of the
 * turn's `message_chunk`s (null when none) with the tool calls rebuilt from the `tool_start`s, and its
 * `tool_thinking` text as `reasoning_content` (the provider profile decides whether it is sent). A call with
 * a written `tool_result` gets its tool message from that event, built as the loop builds it: the event
 * holds what the model was shown (shownToolResult, secrets scrubbed). A call with a `tool_start` and no
 * result is pending: the new attempt runs it again, with the same call_id. Text after the last non-text
 * event belongs to a model call that was cut off: it is dropped and the model asked again. So is text an
 * earlier `attempt_started` voided (all of it sits before that marker, a non-text event), and the
 * reasoning of such a cut-off call. `tool_call_delta` counts as text: a turn's calls come from its `tool_start`s.
 *
 * `step_finished` events say what the model calls cost, not what the model said: they leave the
 * conversation alone, and their sum is what the earlier attempts spent (`spent`).
 *
 * A `tool_start` with a call_id seen before is a re-run of a pending call by a later attempt, not a new
 * turn.
 *
 * Approvals: a call with `approval_requested` and no `approval_decided` awaits a decision (the runner reads
 * it from the parked task before anything runs); an approved call left without a result runs again without
 * asking; a denied one is answered with the denial (its `tool_result` follows the decision, but the
 * decision alone answers it should the attempt have died in between). An attempt that wrote an
 * `approval_requested` ended by parking: it is not a work attempt that failed.
 */
import type { ChatAssistantMessage, ChatMessage, ChatToolCall, TaskEvent } from '@agentmesh/protocol';
import { earlierSpendOf, type EarlierSpend } from '../budget/task-spend.js';
import { dynamicToolEntries } from '../tools/task-tools.js';
import { toolMessage } from '../tools/tool-call.js';
import type { ToolOutcome } from '../tools/tool-outcome.js';
import { deniedCallOutcome } from '../approval/denied-call.js';
import { remoteInputRequestsOf, type AwaitingRemoteInput } from '../tools/a2a/index.js';

/** A resolved call whose shown result carries `_dynamic_tools`: the tools it added must be added again. */
export interface DynamicToolsLookup {
  readonly call: ChatToolCall;
}

export interface ResumePoint {
  /** The messages after the task's input: answered turns and the tool messages of their resolved calls. */
  readonly conversation: readonly ChatMessage[];
  /** Model turns answered (each one model call): the loop counts on from here. */
  readonly steps: number;
  /** Calls of the last answered turn with a `tool_start` but no `tool_result`, in the model's order. */
  readonly pendingCalls: readonly ChatToolCall[];
  /** Calls whose `tool_result` was written (not run again). */
  readonly resolvedCalls: number;
  /** Resolved calls, in order, whose results added dynamic tools (see agent-loop). */
  readonly dynamicToolsLookups: readonly DynamicToolsLookup[];
  /** Seq of the last non-text event kept: earlier attempts' text after it is void. */
  readonly dropTextAfterSeq: number;
  /** The distinct delivery attempts that wrote events and did not end by parking: attempts that did work. */
  readonly workAttempts: ReadonlySet<number>;
  /** Calls that submitted a sub-task (`subtask_started`): they count against the task's fan-out limit. */
  readonly subtaskCallIds: ReadonlySet<string>;
  /** Call id → the task it runs on another system (`tool_progress.remote_task_id`, the last one named). */
  readonly remoteTaskIds: ReadonlyMap<string, string>;
  /** The remote A2A tasks the calls left waiting for input, by id: later calls may answer them. */
  readonly remoteInputs: ReadonlyMap<string, AwaitingRemoteInput>;
  /** What the earlier attempts' model calls used (their `step_finished` events); none: nothing. */
  readonly spent?: EarlierSpend;
  /** The highest attempt number in the events (parked attempts included). */
  readonly lastAttempt: number;
  /** Calls a person approved: they run without asking again. */
  readonly approvedCalls: ReadonlySet<string>;
  /** Calls whose approval was requested and is not decided in the events, in request order. */
  readonly awaitingApproval: readonly string[];
  /**
   * The place in the agent's model list of the model that answered last (`step_finished.model_index`):
   * a fallback that took over goes on answering the resumed task. Absent: the first.
   */
  readonly lastModelIndex?: number;
}

interface Turn {
  content: string | null;
  /** The turn's `tool_thinking` text; kept for providers that need it sent back (DeepSeek). */
  reasoning?: string;
  calls: ChatToolCall[];
  results: Map<string, ToolOutcome>;
}

export function resumePointOf(events: readonly TaskEvent[]): ResumePoint {
  const turns: Turn[] = [];
  const knownCalls = new Set<string>();
  let text = '';
  let thinking = '';
  let lastNonText = 0;
  /** The turn whose tool_starts are being read (no other event since its first one). */
  let open: Turn | undefined;
  const requested = new Map<string, string>();
  const approvedCalls = new Set<string>();
  const parkedAttempts = new Set<number>();
  for (const event of events) {
    switch (event.type) {
      case 'message_chunk':
        text += event.data.delta;
        continue;
      case 'tool_thinking':
        thinking += event.data.delta;
        continue;
      case 'tool_call_delta':
        // Streamed argument text: the turn's tool_starts carry the calls whole; like text, it is void when
        // its model call was cut off (it lies after the last non-text event).
        continue;
      case 'step_finished':
        continue;
      case 'model_waiting':
        continue;
      case 'tool_start': {
        const { call_id: id, tool, arguments: args } = event.data;
        if (knownCalls.has(id)) {
          open = undefined;
        } else {
          const call: ChatToolCall = {
            id,
            type: 'function',
            function: { name: tool, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
          };
          knownCalls.add(id);
          if (open === undefined || text !== '') {
            open = {
              content: text === '' ? null : text,
              ...(thinking === '' ? {} : { reasoning: thinking }),
              calls: [],
              results: new Map(),
            };
            turns.push(open);
          }
          open.calls.push(call);
        }
        break;
      }
      case 'tool_result': {
        open = undefined;
        const data = event.data;
        const outcome: ToolOutcome = data.ok
          ? { ok: true, result: data.result }
          : { ok: false, error: data.error };
        turns
          .findLast((turn) => turn.calls.some((call) => call.id === data.call_id))
          ?.results.set(data.call_id, outcome);
        break;
      }
      case 'tool_progress':
      case 'attempt_started':
        open = undefined;
        break;
      case 'approval_requested':
        open = undefined;
        requested.set(event.data.call_id, event.data.tool);
        parkedAttempts.add(event.attempt);
        break;
      case 'approval_decided': {
        open = undefined;
        const data = event.data;
        requested.delete(data.call_id);
        if (data.approved) {
          approvedCalls.add(data.call_id);
          break;
        }
        const turn = turns.findLast((candidate) => candidate.calls.some((call) => call.id === data.call_id));
        if (turn !== undefined && !turn.results.has(data.call_id)) {
          turn.results.set(data.call_id, deniedCallOutcome(data.comment));
        }
        break;
      }
      case 'done':
      case 'error':
        // A terminal event ends the task; the runner acknowledges such a task before resuming anything.
        open = undefined;
        break;
    }
    text = '';
    thinking = '';
    lastNonText = event.seq;
  }
  const approvals = { approvedCalls, awaitingApproval: [...requested.keys()], parkedAttempts };
  return assemble(turns, lastNonText, events, approvals);
}

function assemble(
  turns: readonly Turn[],
  dropTextAfterSeq: number,
  events: readonly TaskEvent[],
  {
    approvedCalls,
    awaitingApproval,
    parkedAttempts,
  }: { approvedCalls: Set<string>; awaitingApproval: string[]; parkedAttempts: Set<number> },
): ResumePoint {
  const conversation: ChatMessage[] = [];
  const dynamicToolsLookups: DynamicToolsLookup[] = [];
  let pendingCalls: ChatToolCall[] = [];
  let resolvedCalls = 0;
  turns.forEach((turn, index) => {
    const assistant: ChatAssistantMessage = {
      role: 'assistant',
      content: turn.content,
      tool_calls: turn.calls,
      ...(turn.reasoning === undefined ? {} : { reasoning_content: turn.reasoning }),
    };
    conversation.push(assistant);
    const pending: ChatToolCall[] = [];
    for (const call of turn.calls) {
      const outcome = turn.results.get(call.id);
      if (outcome === undefined) {
        pending.push(call);
        continue;
      }
      resolvedCalls += 1;
      conversation.push(toolMessage(call.id, outcome));
      if (outcome.ok && dynamicToolEntries(outcome.result) !== undefined) dynamicToolsLookups.push({ call });
    }
    // The loop waits for every result of a step before the next model call, so only the last turn can
    // have calls without one. Should an earlier turn lack one, the model is told it was lost.
    if (index === turns.length - 1) pendingCalls = pending;
    else for (const call of pending) conversation.push(lostResult(call));
  });
  return {
    conversation,
    steps: turns.length,
    pendingCalls,
    resolvedCalls,
    dynamicToolsLookups,
    dropTextAfterSeq,
    workAttempts: new Set(
      events.map((event) => event.attempt).filter((attempt) => !parkedAttempts.has(attempt)),
    ),
    lastAttempt: Math.max(0, ...events.map((event) => event.attempt)),
    approvedCalls,
    awaitingApproval,
    subtaskCallIds: new Set(
      events.flatMap((event) => (event.type === 'subtask_started' ? [event.data.call_id] : [])),
    ),
    remoteTaskIds: new Map(
      events.flatMap((event) =>
        event.type === 'tool_progress' && event.data.remote_task_id !== undefined
          ? [[event.data.call_id, event.data.remote_task_id] as const]
          : [],
      ),
    ),
    remoteInputs: remoteInputRequestsOf(events),
    spent: earlierSpendOf(events),
    ...lastModelIndexOf(events),
  };
}

/** The model list place of the last `step_finished` that names one. */
function lastModelIndexOf(events: readonly TaskEvent[]): { lastModelIndex?: number } {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event?.type === 'step_finished' && event.data.model_index !== undefined) {
      return { lastModelIndex: event.data.model_index };
    }
  }
  return {};
}

function lostResult(call: ChatToolCall): ChatMessage {
  return toolMessage(call.id, {
    ok: false,
    error: {
      code: 'INTERNAL',
      message: `the result of ${call.function.name} was lost; call it again if needed`,
    },
  });
}
