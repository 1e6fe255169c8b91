/**
 * How the CLI shows a task's events. Human form: the answer's text streams to stdout, one short line
 * per tool call, tool result and error goes to stderr (reasoning is left out). JSON form: every event
 * as one JSON line on stdout, for scripts and `jq`.
 *
 * A resumed attempt (`attempt_started`) voids text of the dead attempt that is already on the screen and
 * cannot be taken back in a stream: the human form says so on stderr and prints the answer that stands
 * again on a fresh stdout line, so the last copy on screen continues into the final answer. `--json` prints
 * the event for the script to fold (TaskTranscript).
 *
 * A tool call waiting for approval is a block on stderr with the tool, its arguments, the reason, the
 * expiry and the exact `agentmesh approve` / `agentmesh deny` commands; the stream then stays open until
 * someone decides. Sub-tasks and finished model steps are one short line each.
 */
import {
  TaskTranscript,
  type ApprovalRequestedEvent,
  type AttemptStartedEvent,
  type SubtaskFinishedEvent,
  type TaskEvent,
  type TokenUsage,
} from '@agentmesh/protocol';

export interface TextSink {
  write(text: string): unknown;
}

export interface CliStreams {
  stdout: TextSink;
  stderr: TextSink;
}

const ARGUMENTS_PREVIEW_LENGTH = 120;
/** Arguments of a call waiting for approval are what a person decides on: shown at more length. */
const APPROVAL_ARGUMENTS_LENGTH = 2000;

export class EventPrinter {
  /** Whether stdout is in the middle of a line (the answer's text so far did not end with one). */
  private openLine = false;
  /** The answer so far, with earlier attempts' voided text taken out. */
  private readonly transcript = new TaskTranscript();

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
    const voided = this.transcript.add(event);
    switch (event.type) {
      case 'message_chunk':
        this.answerText(event.data.delta);
        return;
      case 'attempt_started':
        this.attemptStarted(event, voided?.answer ?? '');
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
      case 'tool_call_delta':
        // The call's tool_start shows its arguments whole.
        return;
      case 'approval_requested':
        this.approvalRequested(event);
        return;
      case 'approval_decided':
        this.note(
          `[approval] ${event.data.tool} ${event.data.call_id} ${event.data.approved ? 'approved' : 'denied'}${
            event.data.comment === undefined ? '' : ` (comment: ${JSON.stringify(event.data.comment)})`
          }`,
        );
        return;
      case 'subtask_started':
        this.note(
          `[sub-task] ${event.data.tool} started ${event.data.workflow_id} as ${event.data.subtask_trace_id} (follow: agentmesh events ${event.data.subtask_trace_id})`,
        );
        return;
      case 'subtask_finished':
        this.note(`[sub-task] ${event.data.tool} ${event.data.subtask_trace_id} ${subtaskOutcome(event)}`);
        return;
      case 'step_finished':
        // Every model call has one: a line each would bury the answer. `--json` and `agentmesh tail` show them.
        return;
      case 'model_waiting':
        this.note(
          `[waiting] ${event.data.model}: its key's ${event.data.limit} limit (${event.data.value}) is full`,
        );
        return;
    }
  }

  private approvalRequested(event: ApprovalRequestedEvent): void {
    const { tool, call_id: callId, reason, expires_at: expiresAt } = event.data;
    const command = `${event.trace_id} ${shellWord(callId)}`;
    this.note(
      [
        `[approval] ${tool} waits for approval: ${reason}`,
        `  call:      ${callId}`,
        `  arguments: ${preview(event.data.arguments, APPROVAL_ARGUMENTS_LENGTH)}`,
        `  expires:   ${expiresAt}`,
        `  approve:   agentmesh approve ${command} [--comment <text>]`,
        `  deny:      agentmesh deny ${command} [--comment <text>]`,
      ].join('\n'),
    );
  }

  private answerText(text: string): void {
    if (text === '') return;
    this.streams.stdout.write(text);
    this.openLine = !text.endsWith('\n');
  }

  private attemptStarted(event: AttemptStartedEvent, voidedAnswer: string): void {
    const { resumed_tool_results: kept, rerun_call_ids: rerun } = event.data;
    const resumed = `[attempt ${event.attempt}] the task resumed (${kept} tool result${kept === 1 ? '' : 's'} kept, ${rerun.length} tool call${rerun.length === 1 ? '' : 's'} run again)`;
    if (voidedAnswer === '') {
      this.note(resumed);
      return;
    }
    // The voided text is printed already: a fresh line, the note, then the answer that stands, which
    // the new attempt continues. Erasing it instead would need the terminal's width and the text's
    // display width; a restated answer is right on every terminal and in a log.
    this.endLine();
    const characters = [...voidedAnswer].length;
    this.streams.stderr.write(
      `${resumed}; the last ${characters} character${characters === 1 ? '' : 's'} above are void, the answer restarts:\n`,
    );
    this.answerText(this.transcript.answer);
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

function preview(value: unknown, length = ARGUMENTS_PREVIEW_LENGTH): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > length ? `${text.slice(0, length)}…` : text;
}

/** `150 tokens ($0.0012)`: the cost only where the executor knows the model's prices. */
export function usageOf(usage: TokenUsage, costUsd: number | undefined): string {
  const tokens = `${usage.total_tokens} token${usage.total_tokens === 1 ? '' : 's'}`;
  return costUsd === undefined ? tokens : `${tokens} ($${costUsd.toFixed(4)})`;
}

function subtaskOutcome(event: SubtaskFinishedEvent): string {
  const { status, error, usage, cost_usd: cost } = event.data;
  const outcome = error === undefined ? status : `${status} ${error.code}: ${error.message}`;
  return usage === undefined ? outcome : `${outcome} (${usageOf(usage, cost)})`;
}

/** A call id as one shell word: quoted when it holds anything a shell would split or expand. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_.:-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A tool's progress as `3/10 message` (MCP tools report it while they run). */
export function progressOf(data: { progress: number; total?: number; message?: string }): string {
  const amount = data.total === undefined ? `${data.progress}` : `${data.progress}/${data.total}`;
  return data.message === undefined ? amount : `${amount} ${data.message}`;
}
