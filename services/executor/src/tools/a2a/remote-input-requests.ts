/**
 * The remote A2A tasks of one task that stopped to ask for more input (`input-required`), and which tool's
 * calls they belong to. A call may answer one with `continue_task_id` (A2A_CONTINUE_TASK_ARGUMENT) only if
 * it is listed here for that tool: the id comes from the model, which must not steer the tool's credential
 * at a remote task this task never ran. Built from the task's event log on resume, kept up to date by each
 * A2A call's outcome.
 */
import { A2A_CONTINUE_TASK_ARGUMENT, isJsonObject, type TaskEvent } from '@agentmesh/protocol';
import type { ToolOutcome } from '../tool-outcome.js';
import { RemoteOutcome } from './remote-task.js';

/** A remote task waiting for input: the tool whose call started it, and its A2A context. */
export interface AwaitingRemoteInput {
  readonly tool: string;
  readonly contextId?: string;
}

export class RemoteInputRequests {
  readonly #waiting: Map<string, AwaitingRemoteInput>;

  constructor(waiting?: ReadonlyMap<string, AwaitingRemoteInput>) {
    this.#waiting = new Map(waiting);
  }

  /** The remote task `taskId` if it waits for input from a call of `tool`. */
  waitingFor(tool: string, taskId: string): AwaitingRemoteInput | undefined {
    const waiting = this.#waiting.get(taskId);
    return waiting?.tool === tool ? waiting : undefined;
  }

  /**
   * Takes in a call's outcome: a remote task that asks for input waits from now on; the task a call of its
   * own tool answered (its `continue_task_id`) waits no more once the answer reached it (the outcome is the
   * task's result, or names it), unless it asked again. A refused call, or one that never got through (an
   * unreadable card, an unreachable agent), leaves it waiting.
   */
  note(tool: string, args: Record<string, unknown>, outcome: ToolOutcome): void {
    const continued = args[A2A_CONTINUE_TASK_ARGUMENT];
    if (typeof continued === 'string' && this.waitingFor(tool, continued) !== undefined) {
      if (outcome.ok || remoteTaskIdOf(outcome) === continued) this.#waiting.delete(continued);
    }
    const asked = inputRequestOf(outcome);
    if (asked !== undefined) this.#waiting.set(asked.taskId, { tool, ...asked.context });
  }

  /** Every remote task waiting for input, by its id. */
  get waiting(): ReadonlyMap<string, AwaitingRemoteInput> {
    return this.#waiting;
  }
}

/** The remote tasks the log's A2A calls left waiting for input, in the order the calls ended. */
export function remoteInputRequestsOf(
  events: readonly TaskEvent[],
): ReadonlyMap<string, AwaitingRemoteInput> {
  const requests = new RemoteInputRequests();
  const argsOf = new Map<string, Record<string, unknown>>();
  for (const event of events) {
    if (event.type === 'tool_start' && isJsonObject(event.data.arguments)) {
      argsOf.set(event.data.call_id, event.data.arguments);
    } else if (event.type === 'tool_result') {
      const { call_id: callId, tool } = event.data;
      const outcome: ToolOutcome = event.data.ok
        ? { ok: true, result: event.data.result }
        : { ok: false, error: event.data.error };
      requests.note(tool, argsOf.get(callId) ?? {}, outcome);
      argsOf.delete(callId);
    }
  }
  return requests.waiting;
}

/** The remote task a failed call names in its detail (the call reached its agent), if any. */
function remoteTaskIdOf(outcome: ToolOutcome): string | undefined {
  if (outcome.ok || !isJsonObject(outcome.error.detail)) return undefined;
  const taskId = outcome.error.detail['task_id'];
  return typeof taskId === 'string' && taskId !== '' ? taskId : undefined;
}

function inputRequestOf(
  outcome: ToolOutcome,
): { taskId: string; context: { contextId?: string } } | undefined {
  if (outcome.ok) return undefined;
  const detail = outcome.error.detail;
  if (!isJsonObject(detail) || detail['state'] !== RemoteOutcome.INPUT_REQUIRED) return undefined;
  const taskId = remoteTaskIdOf(outcome);
  if (taskId === undefined) return undefined;
  const contextId = detail['context_id'];
  return { taskId, context: typeof contextId === 'string' && contextId !== '' ? { contextId } : {} };
}
