/**
 * Incremental Server-Sent Events parser (the WHATWG event-stream format): feed it text as it
 * arrives, split anywhere, and it hands back each complete event. Lines may end in `\n`, `\r\n`
 * or `\r`; comment lines (`: keep-alive`) are skipped; multi-line `data:` fields are joined by
 * `\n`. Only the fields a chat-completions stream uses are kept.
 */

export interface SseEvent {
  /** `event:` field; `message` when absent. */
  readonly event: string;
  readonly data: string;
}

/** A line or event grew past the limit: the stream is not a sane SSE stream. */
export class SseLimitError extends Error {
  override readonly name = 'SseLimitError';
}

const DEFAULT_MAX_EVENT_CHARS = 16 * 1024 * 1024;

export class SseParser {
  private buffer = '';
  /** The previous push ended in `\r`: a `\n` opening the next one belongs to that line ending. */
  private pendingCarriageReturn = false;
  private dataLines: string[] = [];
  private dataChars = 0;
  private eventName = '';
  private started = false;

  constructor(private readonly maxEventChars = DEFAULT_MAX_EVENT_CHARS) {}

  /** Adds text and returns the events it completes. */
  push(text: string): SseEvent[] {
    let input = text;
    if (!this.started && input.length > 0) {
      this.started = true;
      if (input.startsWith('\uFEFF')) input = input.slice(1);
    }
    if (this.pendingCarriageReturn && input.startsWith('\n')) input = input.slice(1);
    this.pendingCarriageReturn = false;
    this.buffer += input;

    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const char = this.buffer[i];
      if (char !== '\n' && char !== '\r') continue;
      const event = this.takeLine(this.buffer.slice(start, i));
      if (event) events.push(event);
      if (char === '\r') {
        if (i + 1 === this.buffer.length) this.pendingCarriageReturn = true;
        else if (this.buffer[i + 1] === '\n') i++;
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    if (this.buffer.length + this.dataChars > this.maxEventChars) {
      throw new SseLimitError(`an SSE event is longer than ${this.maxEventChars} characters`);
    }
    return events;
  }

  /**
   * The stream ended. Strictly an unterminated event is dropped; servers that close right after
   * their last `data:` line without the blank line are common enough to be lenient about it.
   */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.buffer.length > 0) {
      const event = this.takeLine(this.buffer);
      if (event) events.push(event);
      this.buffer = '';
    }
    const last = this.dispatch();
    if (last) events.push(last);
    return events;
  }

  private takeLine(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.dataLines.push(value);
      this.dataChars += value.length + 1;
    } else if (field === 'event') {
      this.eventName = value;
    }
    // `id` and `retry` matter to reconnecting EventSource clients, not to one completion.
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const hasData = this.dataLines.length > 0;
    const event = hasData
      ? { event: this.eventName || 'message', data: this.dataLines.join('\n') }
      : undefined;
    this.dataLines = [];
    this.dataChars = 0;
    this.eventName = '';
    return event;
  }
}
