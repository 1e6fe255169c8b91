/**
 * What a bench client makes of one task's events as they arrive: how many, how many `message_chunk`s,
 * when the first chunk came, and whether the task succeeded. An `error` terminal event is a failure,
 * and so is anything that breaks what a client may rely on: `seq` strictly increasing, exactly one
 * terminal event, nothing after it, the chunks adding up to the final answer (and that answer being the
 * one the scripted model gave).
 */
import { performance } from 'node:perf_hooks';
import { EventType, isTerminalEventType, type TaskEvent } from '@agentmesh/protocol';

export interface TaskOutcome {
  /** Set when the task ended in an `error` event, or a client-side guarantee broke. */
  failure?: string;
  events: number;
  messageChunks: number;
  /** Submission → first `message_chunk` at the client, in ms. */
  firstChunkMs: number | undefined;
}

/** Folds a task's events as they arrive; says when the terminal one has come. */
export class EventTally {
  readonly outcome: TaskOutcome = { events: 0, messageChunks: 0, firstChunkMs: undefined };
  private lastSeq = 0;
  private streamed = '';
  terminal = false;

  /**
   * @param startedAt `performance.now()` at submission.
   * @param expectedAnswer the `done` event's message the task must end with.
   */
  constructor(
    private readonly startedAt: number,
    private readonly expectedAnswer?: string,
  ) {}

  add(event: TaskEvent): void {
    const outcome = this.outcome;
    outcome.events += 1;
    if (this.terminal) {
      outcome.failure ??= `event ${event.type} (seq ${event.seq}) after the terminal event`;
      return;
    }
    if (event.seq <= this.lastSeq) {
      outcome.failure ??= `seq ${event.seq} after seq ${this.lastSeq}: not strictly increasing`;
    }
    this.lastSeq = event.seq;
    if (event.type === EventType.MESSAGE_CHUNK) {
      outcome.messageChunks += 1;
      outcome.firstChunkMs ??= performance.now() - this.startedAt;
      this.streamed += event.data.delta;
    } else if (isTerminalEventType(event.type)) {
      this.terminal = true;
      if (event.type === EventType.ERROR) outcome.failure ??= `error event: ${JSON.stringify(event.data)}`;
    }
    if (event.type === EventType.DONE) {
      const answer = event.data.message;
      if (this.expectedAnswer !== undefined && answer !== this.expectedAnswer) {
        outcome.failure ??= `answer ${JSON.stringify(answer.slice(0, 60))} is not the scripted one`;
      } else if (this.streamed !== answer) {
        outcome.failure ??= `the message chunks (${this.streamed.length} chars) do not add up to the answer (${answer.length} chars)`;
      }
    }
  }
}
