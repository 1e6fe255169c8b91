/**
 * The console's waterfall (console/task-waterfall.js, plain JavaScript served to the browser) run in
 * Node: a crafted event list of two attempts with model turns, a tool call, an approval and a sub-task.
 */
import { describe, expect, it } from 'vitest';

interface Row {
  kind: string;
  label: string;
  attempt: number;
  startMs: number;
  endMs: number;
  durationMs: number;
  tokens?: number;
  costUsd?: number;
  estimated?: boolean;
  state?: string;
  depth: number;
}
interface Waterfall {
  rows: Row[];
  totalMs: number;
  tokens: number;
  costUsd?: number;
}
const { waterfallRows, formatDuration } = (await import(
  new URL('../console/task-waterfall.js', import.meta.url).href
)) as {
  waterfallRows: (events: unknown[], origin?: string) => Waterfall;
  formatDuration: (ms: number) => string;
};

const T0 = Date.parse('2026-11-28T10:00:00.000Z');
const TRACE = 'a'.repeat(32);
const SUB = 'b'.repeat(32);
let seq = 0;
const event = (ms: number, attempt: number, type: string, data: Record<string, unknown>) => ({
  trace_id: TRACE,
  seq: ++seq,
  ts: new Date(T0 + ms).toISOString(),
  attempt,
  type,
  data,
});
const usage = (total: number) => ({ prompt_tokens: total - 1, completion_tokens: 1, total_tokens: total });

const events = [
  event(1_000, 1, 'step_finished', {
    step: 1,
    finish_reason: 'tool_calls',
    usage: usage(100),
    cost_usd: 0.001,
    total_usage: usage(100),
    total_cost_usd: 0.001,
  }),
  event(1_010, 1, 'tool_start', { call_id: 'c1', tool: 'search', arguments: {} }),
  event(1_510, 1, 'tool_result', { call_id: 'c1', tool: 'search', ok: true, result: 1, duration_ms: 498 }),
  event(1_520, 1, 'approval_requested', {
    call_id: 'c2',
    tool: 'pay',
    arguments: {},
    reason: 'amount',
    expires_at: new Date(T0 + 600_000).toISOString(),
  }),
  event(5_520, 1, 'approval_decided', {
    call_id: 'c2',
    tool: 'pay',
    approved: true,
    decided_at: new Date(T0 + 5_520).toISOString(),
  }),
  event(5_530, 1, 'subtask_started', {
    call_id: 'c3',
    tool: 'ask_sub',
    subtask_trace_id: SUB,
    workflow_id: 'sub',
  }),
  event(5_600, 1, 'message_chunk', { delta: 'ignored text' }),
  event(7_530, 1, 'subtask_finished', {
    call_id: 'c3',
    tool: 'ask_sub',
    subtask_trace_id: SUB,
    status: 'done',
    usage: usage(40),
    cost_usd: 0.002,
  }),
  event(8_000, 1, 'step_finished', {
    step: 2,
    usage: usage(50),
    usage_reported: false,
    total_usage: usage(150),
    total_cost_usd: 0.001,
  }),
  // The executor died; JetStream redelivered the task to another, which resumed it.
  event(9_000, 2, 'attempt_started', {
    drop_text_after_seq: 9,
    resumed_steps: 2,
    resumed_tool_results: 1,
    rerun_call_ids: [],
  }),
  event(9_500, 2, 'step_finished', {
    step: 3,
    finish_reason: 'stop',
    usage: usage(30),
    cost_usd: 0.0005,
    total_usage: usage(180),
    total_cost_usd: 0.0015,
  }),
  event(9_600, 2, 'done', {
    message: 'ok',
    steps: 3,
    usage: usage(180),
    cost_usd: 0.0015,
    duration_ms: 9_550,
  }),
];

describe('console task waterfall', () => {
  it('when a task has turns, a tool call, an approval, a sub-task and a retry, each is a row with its start, duration, tokens and cost', () => {
    const origin = new Date(T0).toISOString();
    // Shuffled and with a duplicate (a reconnect replays): the result is the same.
    const waterfall = waterfallRows([...events].reverse().concat(events[3]!), origin);
    const brief = waterfall.rows.map(
      ({ kind, label, attempt, startMs, durationMs, tokens, costUsd, state }) => ({
        kind,
        label,
        attempt,
        startMs,
        durationMs,
        ...(tokens === undefined ? {} : { tokens }),
        ...(costUsd === undefined ? {} : { costUsd }),
        ...(state === undefined ? {} : { state }),
      }),
    );
    expect(brief).toEqual([
      {
        kind: 'attempt',
        label: 'attempt 1',
        attempt: 1,
        startMs: 0,
        durationMs: 8_000,
        tokens: 150,
        costUsd: 0.001,
      },
      // The first turn runs from the submit time to its step_finished.
      {
        kind: 'model',
        label: 'model turn 1 (tool_calls)',
        attempt: 1,
        startMs: 0,
        durationMs: 1_000,
        tokens: 100,
        costUsd: 0.001,
      },
      { kind: 'tool', label: 'tool search', attempt: 1, startMs: 1_010, durationMs: 498, state: 'ok' },
      {
        kind: 'approval',
        label: 'approval of pay',
        attempt: 1,
        startMs: 1_520,
        durationMs: 4_000,
        state: 'approved',
      },
      {
        kind: 'subtask',
        label: `sub-task sub ${SUB.slice(0, 8)}`,
        attempt: 1,
        startMs: 5_530,
        durationMs: 2_000,
        tokens: 40,
        costUsd: 0.002,
        state: 'done',
      },
      // The second turn starts when the sub-task it waited for finished.
      { kind: 'model', label: 'model turn 2', attempt: 1, startMs: 7_530, durationMs: 470, tokens: 50 },
      {
        kind: 'attempt',
        label: 'attempt 2 (retry: 2 turns, 1 tool results taken over)',
        attempt: 2,
        startMs: 9_000,
        durationMs: 600,
        tokens: 30,
        costUsd: 0.0005,
      },
      {
        kind: 'model',
        label: 'model turn 3 (stop)',
        attempt: 2,
        startMs: 9_000,
        durationMs: 500,
        tokens: 30,
        costUsd: 0.0005,
      },
    ]);
    expect(waterfall.rows.find((row) => row.label === 'model turn 2')?.estimated).toBe(true);
    expect(waterfall.rows.find((row) => row.kind === 'subtask')?.depth).toBe(1);
    expect(waterfall).toMatchObject({ totalMs: 9_550, tokens: 180, costUsd: 0.0015 });
  });

  it('when a task is still running, its open tool call and approval reach the last event and say so; an error is a row', () => {
    const running = waterfallRows([
      events[0]!,
      events[1]!,
      events[3]!,
      event(2_000, 1, 'error', { code: 'APPROVAL_TIMEOUT', message: 'late', retryable: false }),
    ]);
    const byKind = Object.fromEntries(running.rows.map((row) => [row.kind, row]));
    // Without a submit time the first event is the origin.
    expect(byKind['model']).toMatchObject({ startMs: 0, durationMs: 0 });
    expect(byKind['tool']).toMatchObject({ state: 'running', startMs: 10, durationMs: 990 });
    expect(byKind['approval']).toMatchObject({ state: 'waiting', durationMs: 480 });
    expect(byKind['error']).toMatchObject({
      label: 'error APPROVAL_TIMEOUT',
      state: 'final',
      startMs: 1_000,
    });
    expect(waterfallRows([])).toMatchObject({ rows: [], totalMs: 0 });
  });

  it('durations read in the unit that fits', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(2_400)).toBe('2.4 s');
    expect(formatDuration(185_000)).toBe('3 min 5 s');
  });
});
