/**
 * How the CLI shows a task's events. Human form: the answer's text streams to stdout, one short line
 * per tool call, tool result and error goes to stderr (reasoning is left out). JSON form: every event
 * as one JSON line on stdout, for scripts and `jq`.
 */
import type { TaskEvent } from '@agentmesh/protocol';

export interface TextSink {
  write(text: string): unknown;
}

export interface CliStreams {
  stdout: TextSink;
  stderr: TextSink;
}

const ARGUMENTS_PREVIEW_LENGTH = 120;

export class EventPrinter {
  /** Whether stdout is in the middle of a line (the answer's text so far did not end with one). */
  private openLine = false;

  constructor(
    private readonly streams: CliStreams,
    private readonly options: {
      json: boolean;
      /** stdout and stderr are the same terminal: a note starts on a fresh line. */
      sharedTerminal: boolean;
    },
  ) {}

  print(event: TaskEvent): void {
    if (this.options.json) {
      this.streams.stdout.write(`${JSON.stringify(event)}\n`);
      return;
    }
    switch (event.type) {
      case 'message_chunk':
        if (event.data.delta === '') return;
        this.streams.stdout.write(event.data.delta);
        this.openLine = !event.data.delta.endsWith('\n');
        return;
      case 'tool_start':
        this.note(`[tool] ${event.data.tool} ${preview(event.data.arguments)}`);
        return;
      case 'tool_result':
        this.note(
          event.data.ok
            ? `[tool] ${event.data.tool} ok (${event.data.duration_ms} ms)`
            : `[tool] ${event.data.tool} failed ${event.data.error.code}: ${event.data.error.message} (${event.data.duration_ms} ms)`,
        );
        return;
      case 'done':
        this.endLine();
        return;
      case 'error':
        this.endLine();
        this.streams.stderr.write(`error ${event.data.code}: ${event.data.message}\n`);
        return;
      case 'tool_progress':
        this.note(`[tool] ${event.data.tool} ${progressOf(event.data)}`);
        return;
      case 'tool_thinking':
        return;
    }
  }

  /** Ends the answer's line on stdout, so a shell prompt does not follow it on the same line. */
  endLine(): void {
    if (this.openLine) this.streams.stdout.write('\n');
    this.openLine = false;
  }

  private note(line: string): void {
    // On a terminal the note must not run on from the answer's text; in a pipe, stdout is left exactly
    // as the model wrote it.
    if (this.options.sharedTerminal) this.endLine();
    this.streams.stderr.write(`${line}\n`);
  }
}

function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > ARGUMENTS_PREVIEW_LENGTH ? `${text.slice(0, ARGUMENTS_PREVIEW_LENGTH)}…` : text;
}

/** A tool's progress as `3/10 message` (MCP tools report it while they run). */
export function progressOf(data: { progress: number; total?: number; message?: string }): string {
  const amount = data.total === undefined ? `${data.progress}` : `${data.progress}/${data.total}`;
  return data.message === undefined ? amount : `${amount} ${data.message}`;
}
