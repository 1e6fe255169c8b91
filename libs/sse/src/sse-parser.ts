/**
 * An incremental Server-Sent Events parser (the WHATWG "event stream interpretation"): text goes in
 * as it arrives, in chunks cut anywhere, and complete messages come out. Handles LF, CRLF and CR line
 * ends (also a CRLF split across two chunks), a leading byte order mark, `:` comments (heartbeats),
 * multi-line `data:`, `id:` and `retry:`. One parser reads one stream: a model's chat-completions
 * stream in the executor, a task's events in the client.
 */

export interface SseMessage {
  /** The last event id seen so far in the stream (it carries over to later messages, as in the spec). */
  readonly id: string | undefined;
  /** `event:` field; `message` when absent. */
  readonly event: string;
  /** The `data:` lines joined with `\n`. */
  readonly data: string;
}

/** A line or message grew past the limit: the stream is not a sane SSE stream. */
export class SseLimitError extends Error {
  override readonly name = 'SseLimitError';
}

const DEFAULT_MAX_MESSAGE_CHARS = 16 * 1024 * 1024;

export class SseParser {
  private buffer = '';
  /** The previous chunk ended in CR: an LF opening the next chunk belongs to that line end. */
  private pendingCr = false;
  private data: string[] = [];
  private dataChars = 0;
  private eventType = '';
  private lastEventId: string | undefined;
  private started = false;
  /** The reconnection delay the server asked for with `retry:`, in milliseconds. */
  retryMs: number | undefined;

  /** @param maxMessageChars bounds the memory one message (or one unterminated line) may take. */
  constructor(private readonly maxMessageChars = DEFAULT_MAX_MESSAGE_CHARS) {}

  /** Feeds decoded text; returns the messages it completed, in order. Throws {@link SseLimitError}. */
  push(text: string): SseMessage[] {
    let chunk = text;
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.startsWith('\uFEFF')) chunk = chunk.slice(1);
    }
    if (this.pendingCr && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.pendingCr = false;
    this.buffer += chunk;

    const messages: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const char = this.buffer[i];
      if (char !== '\n' && char !== '\r') continue;
      const message = this.processLine(this.buffer.slice(start, i));
      if (message) messages.push(message);
      if (char === '\r') {
        if (i + 1 === this.buffer.length) this.pendingCr = true;
        else if (this.buffer[i + 1] === '\n') i++;
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    if (this.buffer.length + this.dataChars > this.maxMessageChars) {
      throw new SseLimitError(`an SSE message is longer than ${this.maxMessageChars} characters`);
    }
    return messages;
  }

  /**
   * The stream ended: the message it ended in the middle of, if any. The spec drops it; a reader that
   * resumes (the client) should, while a model stream whose server closes right after its last
   * `data:` line without the blank line is common enough to take it.
   */
  end(): SseMessage[] {
    const messages: SseMessage[] = [];
    if (this.buffer.length > 0) {
      const message = this.processLine(this.buffer);
      if (message) messages.push(message);
      this.buffer = '';
    }
    const last = this.dispatch();
    if (last) messages.push(last);
    return messages;
  }

  private processLine(line: string): SseMessage | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data.push(value);
        this.dataChars += value.length + 1;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
      // Unknown fields are ignored, as the spec says.
    }
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const data = this.data;
    const event = this.eventType || 'message';
    this.data = [];
    this.dataChars = 0;
    this.eventType = '';
    // A block without data (only an id, say) dispatches nothing.
    if (data.length === 0) return undefined;
    return { id: this.lastEventId, event, data: data.join('\n') };
  }
}
