/**
 * A mesh task as A2A sees it: the task's events folded into an A2A `Task` (state, status message, the
 * final answer as an artifact), and each event mapped to the `StreamResponse`s a stream carries. The
 * state, answer and approval wording are door-mapping's; this module only spells them in A2A's types.
 *
 * Every streamed status or artifact update carries a cursor `<seq>:<k>` (the mesh event's seq and the
 * update's place among that event's updates) in `metadata.agentmesh.cursor`, and as the SSE `id:`. A
 * client that lost its connection resubscribes with `Last-Event-ID: <cursor>` and gets exactly the updates
 * after it: nothing lost, nothing repeated.
 *
 * - text (`message_chunk`) → a status update (state working) whose message is the piece of text;
 * - any other event before the end → a status update whose message holds the event as a data part
 *   (`{type, data}`), so tool calls, reasoning and sub-tasks are visible as progress;
 * - `approval_requested` → input required, the message says how to decide (approvalPrompt);
 * - `done` → the artifact `answer` (the final text; the structured output as a data part when there is
 *   one), then the status completed;
 * - `error` → failed (canceled for CANCELLED, auth required for CREDENTIALS_MISSING), the message names
 *   the mesh's error code.
 */
import {
  Role,
  TaskState,
  type Artifact,
  type Message,
  type Part,
  type Task,
  type StreamResponse,
} from '@a2a-js/sdk';
import { EventType, type TaskEvent } from '@agentmesh/protocol';
import {
  approvalPrompt,
  DoorTaskState,
  doorStateAfter,
  taskAnswerOf,
  type TaskAnswer,
} from '../door-mapping/index.js';

export const ANSWER_ARTIFACT_ID = 'answer';

const STATE_OF_DOOR: Record<DoorTaskState, TaskState> = {
  [DoorTaskState.SUBMITTED]: TaskState.TASK_STATE_SUBMITTED,
  [DoorTaskState.WORKING]: TaskState.TASK_STATE_WORKING,
  [DoorTaskState.INPUT_REQUIRED]: TaskState.TASK_STATE_INPUT_REQUIRED,
  [DoorTaskState.AUTH_REQUIRED]: TaskState.TASK_STATE_AUTH_REQUIRED,
  [DoorTaskState.COMPLETED]: TaskState.TASK_STATE_COMPLETED,
  [DoorTaskState.FAILED]: TaskState.TASK_STATE_FAILED,
  [DoorTaskState.CANCELED]: TaskState.TASK_STATE_CANCELED,
};

export function a2aStateOf(state: DoorTaskState): TaskState {
  return STATE_OF_DOOR[state];
}

/** Where a stream stands: after update `index` of the event `seq` (-1: before any of its updates). */
export interface StreamCursor {
  seq: number;
  index: number;
}

/** `<seq>:<k>`, or `<seq>` (after every update of that event); undefined when it is neither. */
export function parseCursor(text: string | undefined): StreamCursor | undefined {
  const match = /^(\d{1,15})(?::(\d{1,3}))?$/.exec(text?.trim() ?? '');
  if (match === null) return undefined;
  return {
    seq: Number(match[1]),
    index: match[2] === undefined ? Number.MAX_SAFE_INTEGER : Number(match[2]),
  };
}

export const formatCursor = (cursor: StreamCursor): string => `${cursor.seq}:${cursor.index}`;

/** Whether the update `index` of event `seq` comes after `cursor`. */
export function isAfter(cursor: StreamCursor, seq: number, index: number): boolean {
  return seq > cursor.seq || (seq === cursor.seq && index > cursor.index);
}

const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});
const dataPart = (value: unknown): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: 'application/json',
});

/** One streamed update of a mesh event, with its cursor. */
export interface StreamedUpdate {
  cursor: StreamCursor;
  response: StreamResponse;
}

/** The A2A task a mesh task is, built up from its events in order. */
export class A2aTaskView {
  state: DoorTaskState;
  private statusMessage: Message | undefined;
  private timestamp: string | undefined;
  private answer: Artifact | undefined;
  /** The last event folded in. */
  lastSeq = 0;

  constructor(
    readonly taskId: string,
    readonly contextId: string,
    state: DoorTaskState = DoorTaskState.SUBMITTED,
    private readonly metadata: Record<string, unknown> = {},
  ) {
    this.state = state;
  }

  /** Takes in the task's next event; answers the updates a stream shows for it, in order. */
  add(event: TaskEvent): StreamedUpdate[] {
    this.lastSeq = event.seq;
    this.timestamp = event.ts;
    this.state = doorStateAfter(this.state, event);
    const updates: StreamResponse[] = [];
    if (event.type === EventType.DONE) {
      this.answer = answerArtifact(taskAnswerOf(event));
      updates.push({
        payload: {
          $case: 'artifactUpdate',
          value: {
            taskId: this.taskId,
            contextId: this.contextId,
            artifact: this.answer,
            append: false,
            lastChunk: true,
            metadata: undefined,
          },
        },
      });
      this.statusMessage = undefined;
    } else {
      this.statusMessage = this.messageOf(event);
    }
    updates.push({ payload: { $case: 'statusUpdate', value: this.statusUpdate() } });
    return updates.map((response, index) => {
      const cursor = { seq: event.seq, index };
      stampCursor(response, cursor);
      return { cursor, response };
    });
  }

  /**
   * The task as it stands; `history` holds the message that started it when given. Its
   * `metadata.agentmesh.cursor` is where a stream that starts from this snapshot resumes from.
   */
  task(history: Message[] = [], cursor: string = String(this.lastSeq)): Task {
    return {
      id: this.taskId,
      contextId: this.contextId,
      status: this.status(),
      artifacts: this.answer === undefined ? [] : [this.answer],
      history,
      metadata: { agentmesh: { ...this.metadata, cursor } },
    };
  }

  /** Settles the state from a status record that has ended (its terminal event may be out of reach). */
  settle(state: DoorTaskState, message?: string): void {
    if (state === this.state) return;
    this.state = state;
    this.statusMessage =
      message === undefined ? undefined : this.agentMessage([textPart(message)], `${this.taskId}-status`);
  }

  private status() {
    return { state: a2aStateOf(this.state), message: this.statusMessage, timestamp: this.timestamp };
  }

  private statusUpdate() {
    return { taskId: this.taskId, contextId: this.contextId, status: this.status(), metadata: undefined };
  }

  private messageOf(event: TaskEvent): Message {
    const id = `${this.taskId}-${event.seq}`;
    switch (event.type) {
      case EventType.MESSAGE_CHUNK:
        return this.agentMessage([textPart(event.data.delta)], id, { delta: true });
      case EventType.APPROVAL_REQUESTED:
        return this.agentMessage(
          [textPart(approvalPrompt(event.data)), dataPart({ type: event.type, data: event.data })],
          id,
        );
      case EventType.ERROR:
        return this.agentMessage(
          [
            textPart(`${event.data.code}: ${event.data.message}`),
            dataPart({
              type: event.type,
              data: { code: event.data.code, message: event.data.message, retryable: event.data.retryable },
            }),
          ],
          id,
        );
      default:
        return this.agentMessage([dataPart({ type: event.type, data: event.data })], id);
    }
  }

  private agentMessage(parts: Part[], messageId: string, metadata?: Record<string, unknown>): Message {
    return {
      messageId,
      contextId: this.contextId,
      taskId: this.taskId,
      role: Role.ROLE_AGENT,
      parts,
      metadata: metadata === undefined ? undefined : { agentmesh: metadata },
      extensions: [],
      referenceTaskIds: [],
    };
  }
}

function answerArtifact(answer: TaskAnswer): Artifact {
  const parts = [textPart(answer.text)];
  if (answer.output !== undefined) parts.push(dataPart(answer.output));
  return {
    artifactId: ANSWER_ARTIFACT_ID,
    name: 'answer',
    description:
      'The final answer of the task (and its structured output, when the task has an output schema)',
    parts,
    metadata: answer.incomplete === undefined ? undefined : { agentmesh: { incomplete: answer.incomplete } },
    extensions: [],
  };
}

function stampCursor(response: StreamResponse, cursor: StreamCursor): void {
  const payload = response.payload;
  if (payload?.$case === 'statusUpdate' || payload?.$case === 'artifactUpdate') {
    payload.value.metadata = { agentmesh: { cursor: formatCursor(cursor) } };
  }
}
