/**
 * The text of a streamed chat completion when a resumed attempt voids text already sent (`attempt_started`).
 * A sent chunk cannot be taken back, so the stream keeps what the client holds in line with the task's
 * transcript (TaskTranscript) as well as an append-only stream can:
 *
 * - After an attempt_started, the new attempt's text is held back while it repeats what the client already
 *   has (a model asked the same question often answers the same words), and only what goes beyond it is
 *   sent: a plain OpenAI client then sees the answer once, as if nothing had happened.
 * - Where the new text departs from what was sent, one chunk with an empty delta and the `agentmesh`
 *   extension `{event: 'retract', content_chars | reasoning_content_chars: n}` says that the last n
 *   characters (Unicode code points) the client holds are void; then the new text follows. A client that
 *   knows the extension deletes them and ends with the exact answer; one that ignores it shows the
 *   repeated part once more, the least bad an append-only stream allows.
 * - At `done`, text still held by the client but never confirmed by the new attempt is retracted the same way.
 */
import { TaskTranscript, type TaskEvent } from '@agentmesh/protocol';
import { chunk, type ChatCompletionChunk, type CompletionIdentity } from './chat-completion-answer.js';

type TextField = 'content' | 'reasoning_content';

/** What one text field of the stream has sent, and whether it is known to equal the transcript. */
class SentField {
  private sent = '';
  /** The sent text equals the transcript's: a new delta is sent as it is, with no comparing. */
  private inStep = true;

  constructor(readonly field: TextField) {}

  /** The earlier attempt's text the client holds just became void (it is a tail of `sent`). */
  fallBehind(): void {
    this.inStep = false;
  }

  /** The chunks that bring the client in line with `truth`, the field's text in the transcript. */
  follow(identity: CompletionIdentity, truth: string, delta: string): ChatCompletionChunk[] {
    if (this.inStep) {
      this.sent += delta;
      return delta === '' ? [] : [chunk(identity, { [this.field]: delta })];
    }
    if (this.sent.startsWith(truth)) {
      // The new attempt so far repeats what the client has: nothing to send yet.
      this.inStep = this.sent.length === truth.length;
      return [];
    }
    const common = commonPrefixLength(this.sent, truth);
    const retracted = this.sent.slice(common);
    const rest = truth.slice(common);
    this.sent = truth;
    this.inStep = true;
    return [
      ...(retracted === '' ? [] : [this.retraction(identity, retracted)]),
      ...(rest === '' ? [] : [chunk(identity, { [this.field]: rest })]),
    ];
  }

  /** At the end: what the client holds beyond the transcript's text is void. */
  settle(identity: CompletionIdentity, truth: string): ChatCompletionChunk[] {
    if (this.inStep) return [];
    const chunks = this.follow(identity, truth, '');
    if (this.sent.length > truth.length) {
      chunks.push(this.retraction(identity, this.sent.slice(truth.length)));
      this.sent = truth;
    }
    this.inStep = true;
    return chunks;
  }

  private retraction(identity: CompletionIdentity, retracted: string): ChatCompletionChunk {
    return chunk(
      identity,
      {},
      { agentmesh: { event: 'retract', [`${this.field}_chars`]: codePoints(retracted) } },
    );
  }
}

export class StreamedText {
  private readonly transcript = new TaskTranscript();
  private readonly content = new SentField('content');
  private readonly reasoning = new SentField('reasoning_content');

  constructor(private readonly identity: CompletionIdentity) {}

  /**
   * The text chunks of one event: answer and reasoning deltas, held back or preceded by a retraction
   * after a resumption; an `attempt_started` itself becomes an `agentmesh` chunk naming it. Undefined for
   * an event that carries no text (its chunks are the caller's).
   */
  chunks(event: TaskEvent): ChatCompletionChunk[] | undefined {
    const voided = this.transcript.add(event);
    switch (event.type) {
      case 'message_chunk':
        return this.content.follow(this.identity, this.transcript.answer, event.data.delta);
      case 'tool_thinking':
        return this.reasoning.follow(this.identity, this.transcript.reasoning, event.data.delta);
      case 'attempt_started':
        if (voided?.answer) this.content.fallBehind();
        if (voided?.reasoning) this.reasoning.fallBehind();
        return [
          chunk(
            this.identity,
            {},
            { agentmesh: { event: event.type, attempt: event.attempt, ...event.data } },
          ),
        ];
      default:
        return undefined;
    }
  }

  /** Before the finishing chunk: retracts what the client holds that the task's text does not. */
  settle(): ChatCompletionChunk[] {
    return [
      ...this.reasoning.settle(this.identity, this.transcript.reasoning),
      ...this.content.settle(this.identity, this.transcript.answer),
    ];
  }
}

function commonPrefixLength(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // Never split a surrogate pair: a retraction counts whole code points.
  if (i > 0 && i < a.length && isHighSurrogate(a.charCodeAt(i - 1))) i--;
  return i;
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
