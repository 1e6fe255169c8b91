import { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { EventPrinter, type TextSink } from './event-printer.js';
import { printTailEvent } from './tail-printer.js';

const progressEvent = TaskEvent.parse({
  trace_id: '0af7651916cd43dd8448eb211c80319c',
  seq: 3,
  ts: '2026-11-24T00:00:00.000Z',
  attempt: 1,
  type: 'tool_progress',
  data: { call_id: 'c1', tool: 'mcp_report', progress: 3, total: 10, message: 'pages read' },
});

class TextBuffer implements TextSink {
  text = '';
  write(chunk: string): void {
    this.text += chunk;
  }
}

describe('a tool reporting progress while it runs', () => {
  it('is a [tool] note on stderr with progress/total and message, and stdout keeps only the answer', () => {
    const streams = { stdout: new TextBuffer(), stderr: new TextBuffer() };
    new EventPrinter(streams, { json: false, sharedTerminal: false }).print(progressEvent);
    expect(streams.stderr.text).toBe('[tool] mcp_report 3/10 pages read\n');
    expect(streams.stdout.text).toBe('');
  });

  it('is one line of agentmesh tail naming its task', () => {
    const stdout = new TextBuffer();
    printTailEvent(progressEvent, false, stdout);
    expect(stdout.text).toBe(`${progressEvent.trace_id} 3 tool_progress mcp_report 3/10 pages read\n`);
  });
});

describe('following a task whose executor died and a new attempt resumed it', () => {
  const event = (seq: number, attempt: number, type: string, data: unknown): TaskEvent =>
    TaskEvent.parse({
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      seq,
      ts: '2026-11-24T00:00:00.000Z',
      attempt,
      type,
      data,
    });
  const attemptStarted = (seq: number, attempt: number, dropTextAfterSeq: number): TaskEvent =>
    event(seq, attempt, 'attempt_started', {
      drop_text_after_seq: dropTextAfterSeq,
      resumed_steps: 1,
      resumed_tool_results: 1,
      rerun_call_ids: [],
    });
  const done = (seq: number, attempt: number, message: string): TaskEvent =>
    event(seq, attempt, 'done', {
      message,
      steps: 2,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      duration_ms: 5,
    });
  const resumedTask = [
    event(1, 1, 'message_chunk', { delta: 'Let me look. ' }),
    event(2, 1, 'tool_start', { call_id: 'c1', tool: 'weather', arguments: {} }),
    event(3, 1, 'tool_result', { call_id: 'c1', tool: 'weather', ok: true, result: 1, duration_ms: 4 }),
    event(4, 1, 'message_chunk', { delta: 'It' }),
    attemptStarted(5, 2, 3),
    event(6, 2, 'message_chunk', { delta: 'It is sunny.' }),
    done(7, 2, 'It is sunny.'),
  ];

  it('says on stderr that the answer restarts and prints the answer that stands again, so the last stdout line is the answer', () => {
    const streams = { stdout: new TextBuffer(), stderr: new TextBuffer() };
    const printer = new EventPrinter(streams, { json: false, sharedTerminal: false });
    for (const each of resumedTask) printer.print(each);
    expect(streams.stdout.text).toBe('Let me look. It\nLet me look. It is sunny.\n');
    expect(streams.stderr.text).toContain(
      '[attempt 2] the task resumed (1 tool result kept, 0 tool calls run again); the last 2 characters above are void, the answer restarts:\n',
    );
    expect(streams.stdout.text.split('\n').at(-2)).toBe('Let me look. It is sunny.');
  });

  it('only notes the resumption when none of the printed text was void', () => {
    const streams = { stdout: new TextBuffer(), stderr: new TextBuffer() };
    const printer = new EventPrinter(streams, { json: false, sharedTerminal: false });
    for (const each of [
      event(1, 1, 'message_chunk', { delta: 'Hi.' }),
      attemptStarted(2, 2, 1),
      event(3, 2, 'message_chunk', { delta: ' Bye.' }),
    ]) {
      printer.print(each);
    }
    expect(streams.stdout.text).toBe('Hi. Bye.');
    expect(streams.stderr.text).toBe(
      '[attempt 2] the task resumed (1 tool result kept, 0 tool calls run again)\n',
    );
  });

  it('prints the attempt_started event as one JSON line with --json, for the script to fold', () => {
    const streams = { stdout: new TextBuffer(), stderr: new TextBuffer() };
    new EventPrinter(streams, { json: true, sharedTerminal: false }).print(resumedTask[4]!);
    expect(JSON.parse(streams.stdout.text)).toEqual(resumedTask[4]);
  });
});

describe('following a task that waits for approval, calls sub-agents and reports its steps', () => {
  const TRACE = '0af7651916cd43dd8448eb211c80319c';
  const SUB = '1bf7651916cd43dd8448eb211c80319d';
  const event = (seq: number, type: string, data: unknown): TaskEvent =>
    TaskEvent.parse({ trace_id: TRACE, seq, ts: '2026-11-24T00:00:00.000Z', attempt: 1, type, data });
  const printed = (...events: TaskEvent[]) => {
    const streams = { stdout: new TextBuffer(), stderr: new TextBuffer() };
    const printer = new EventPrinter(streams, { json: false, sharedTerminal: false });
    for (const item of events) printer.print(item);
    return streams;
  };

  it('approval_requested is a block on stderr with the tool, arguments, reason, expiry and the exact approve and deny commands', () => {
    const { stdout, stderr } = printed(
      event(3, 'approval_requested', {
        call_id: 'call_9',
        tool: 'pay_invoice',
        arguments: { amount: 1200, vendor: 'ACME' },
        reason: 'amount above 1000',
        expires_at: '2026-11-24T01:00:00.000Z',
      }),
    );
    expect(stdout.text).toBe('');
    expect(stderr.text).toBe(
      [
        '[approval] pay_invoice waits for approval: amount above 1000',
        '  call:      call_9',
        '  arguments: {"amount":1200,"vendor":"ACME"}',
        '  expires:   2026-11-24T01:00:00.000Z',
        `  approve:   agentmesh approve ${TRACE} call_9 [--comment <text>]`,
        `  deny:      agentmesh deny ${TRACE} call_9 [--comment <text>]`,
        '',
      ].join('\n'),
    );
  });

  it('a call id a shell would split is quoted in the commands', () => {
    const { stderr } = printed(
      event(3, 'approval_requested', {
        call_id: "call 1's",
        tool: 't',
        arguments: '{}',
        reason: 'always',
        expires_at: '2026-11-24T01:00:00.000Z',
      }),
    );
    expect(stderr.text).toContain(`agentmesh approve ${TRACE} 'call 1'\\''s' [--comment <text>]`);
  });

  it('approval_decided and subtask_started/finished are one short line each; step_finished prints nothing', () => {
    const usage = { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 };
    const { stderr } = printed(
      event(4, 'approval_decided', {
        call_id: 'call_9',
        tool: 'pay_invoice',
        approved: false,
        comment: 'wrong vendor',
        decided_at: '2026-11-24T00:10:00.000Z',
      }),
      event(5, 'subtask_started', {
        call_id: 'c2',
        tool: 'researcher',
        subtask_trace_id: SUB,
        workflow_id: 'research',
      }),
      event(6, 'subtask_finished', {
        call_id: 'c2',
        tool: 'researcher',
        subtask_trace_id: SUB,
        status: 'error',
        error: { code: 'BUDGET_EXCEEDED', message: 'token budget spent' },
      }),
      event(7, 'step_finished', {
        step: 2,
        usage,
        cost_usd: 0.0012,
        total_usage: { ...usage, total_tokens: 400 },
        total_cost_usd: 0.0031,
      }),
    );
    expect(stderr.text.split('\n')).toEqual([
      '[approval] pay_invoice call_9 denied (comment: "wrong vendor")',
      `[sub-task] researcher started research as ${SUB} (follow: agentmesh events ${SUB})`,
      `[sub-task] researcher ${SUB} error BUDGET_EXCEEDED: token budget spent`,
      '',
    ]);
  });
});
