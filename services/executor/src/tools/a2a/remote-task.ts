// One remote A2A task as the stream tells it: its id, its state, its artifacts (chunks appended by id), and
// the answer the tool hands back: the artifacts' text, data parts as JSON, files named; the last status
// message when there are no artifacts; a direct reply message when the agent answered without a task.
import { TaskState, type Artifact, type Message, type Part, type StreamResponse } from '@a2a-js/sdk';

/** How a remote task stands once the stream leaves off. */
export const RemoteOutcome = {
  /** Still running: the stream broke off before a final state. */
  RUNNING: 'running',
  COMPLETED: 'completed',
  FAILED: 'failed',
  REJECTED: 'rejected',
  CANCELED: 'canceled',
  INPUT_REQUIRED: 'input-required',
  AUTH_REQUIRED: 'auth-required',
} as const;
export type RemoteOutcome = (typeof RemoteOutcome)[keyof typeof RemoteOutcome];

const OUTCOME_OF: Partial<Record<TaskState, RemoteOutcome>> = {
  [TaskState.TASK_STATE_COMPLETED]: RemoteOutcome.COMPLETED,
  [TaskState.TASK_STATE_FAILED]: RemoteOutcome.FAILED,
  [TaskState.TASK_STATE_REJECTED]: RemoteOutcome.REJECTED,
  [TaskState.TASK_STATE_CANCELED]: RemoteOutcome.CANCELED,
  [TaskState.TASK_STATE_INPUT_REQUIRED]: RemoteOutcome.INPUT_REQUIRED,
  [TaskState.TASK_STATE_AUTH_REQUIRED]: RemoteOutcome.AUTH_REQUIRED,
};

export class RemoteTask {
  taskId: string | undefined;
  contextId: string | undefined;
  outcome: RemoteOutcome = RemoteOutcome.RUNNING;
  /** The text of the latest status message. */
  statusText: string | undefined;
  #reply: Message | undefined;
  readonly #artifacts = new Map<string, Artifact>();

  /** Folds one stream item in; returns the text a status update brought (for progress), if any. */
  apply(item: StreamResponse): { status?: string } {
    const payload = item.payload;
    switch (payload?.$case) {
      case 'task': {
        const task = payload.value;
        this.taskId = task.id;
        this.contextId = task.contextId;
        for (const artifact of task.artifacts) this.#artifacts.set(artifact.artifactId, artifact);
        // A snapshot (the first item, or a re-subscription's): its status was reported when it came.
        this.#status(task.status?.state, task.status?.message);
        return {};
      }
      case 'statusUpdate': {
        const update = payload.value;
        this.taskId ||= update.taskId;
        this.contextId ||= update.contextId;
        return this.#status(update.status?.state, update.status?.message);
      }
      case 'artifactUpdate': {
        const { artifact, append } = payload.value;
        if (artifact === undefined) return {};
        const earlier = this.#artifacts.get(artifact.artifactId);
        this.#artifacts.set(
          artifact.artifactId,
          append && earlier !== undefined
            ? { ...earlier, parts: [...earlier.parts, ...artifact.parts] }
            : artifact,
        );
        return {};
      }
      case 'message':
        this.#reply = payload.value;
        this.outcome = RemoteOutcome.COMPLETED;
        return {};
      default:
        return {};
    }
  }

  /** Forgets everything (a remote task the agent no longer knows: the call starts anew). */
  reset(): void {
    this.taskId = this.contextId = this.statusText = this.#reply = undefined;
    this.outcome = RemoteOutcome.RUNNING;
    this.#artifacts.clear();
  }

  /** Whether the stream has said all it will: a final state, or one that waits for the client. */
  get settled(): boolean {
    return this.outcome !== RemoteOutcome.RUNNING;
  }

  /** The answer: artifacts first, else the reply or the last status message. */
  answer(): string {
    const artifacts = [...this.#artifacts.values()].map((artifact) => partsText(artifact.parts));
    const text = artifacts.filter((entry) => entry !== '').join('\n\n');
    if (text !== '') return text;
    if (this.#reply !== undefined) return partsText(this.#reply.parts);
    return this.statusText ?? '';
  }

  #status(state: TaskState | undefined, message: Message | undefined): { status?: string } {
    const outcome = state === undefined ? undefined : OUTCOME_OF[state];
    if (outcome !== undefined) this.outcome = outcome;
    if (message === undefined) return {};
    const text = partsText(message.parts);
    if (text === '') return {};
    this.statusText = text;
    return { status: text };
  }
}

export function partsText(parts: readonly Part[]): string {
  return parts
    .map((part) => {
      const content = part.content;
      switch (content?.$case) {
        case 'text':
          return content.value;
        case 'data':
          return JSON.stringify(content.value) ?? 'null';
        case 'url':
          return `[file${part.filename ? ` ${part.filename}` : ''}${part.mediaType ? ` (${part.mediaType})` : ''}: ${content.value}]`;
        case 'raw':
          return `[file${part.filename ? ` ${part.filename}` : ''}${part.mediaType ? ` (${part.mediaType})` : ''}: ${content.value.length} bytes not shown]`;
        default:
          return '';
      }
    })
    .filter((text) => text !== '')
    .join('\n');
}
