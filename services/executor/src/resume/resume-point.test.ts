import type { EventData, EventType, TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { resumePointOf } from './resume-point.js';

/** A task's log as events numbered from 1; `attempt` switches the attempt writing from there on. */
function log(...entries: Array<[EventType, unknown] | { attempt: number }>): TaskEvent[] {
  let attempt = 1;
  const events: TaskEvent[] = [];
  for (const entry of entries) {
    if (!Array.isArray(entry)) {
      attempt = entry.attempt;
      continue;
    }
    const [type, data] = entry;
    events.push({
      trace_id: 'a'.repeat(32),
      seq: events.length + 1,
      ts: '',
      attempt,
      type,
      data,
    } as TaskEvent);
  }
  return events;
}

const chunk = (delta: string): [EventType, EventData<'message_chunk'>] => ['message_chunk', { delta }];
const start = (id: string, args: EventData<'tool_start'>['arguments'] = { q: id }): [EventType, unknown] => [
  'tool_start',
  { call_id: id, tool: 'search', arguments: args },
];
const result = (id: string, value: unknown): [EventType, unknown] => [
  'tool_result',
  { call_id: id, tool: 'search', ok: true, result: value, duration_ms: 3 },
];

describe('resuming from a task event log', () => {
  it("an answered turn becomes the assistant's message (its text, its reasoning and its calls) followed by the written results", () => {
    const point = resumePointOf(
      log(
        chunk('Let me '),
        chunk('look.'),
        ['tool_thinking', { delta: 'hmm' }],
        start('c1'),
        start('c2', 'not json'),
        result('c2', 'plain text'),
        result('c1', { hits: [1] }),
      ),
    );

    expect(point.conversation).toEqual([
      {
        role: 'assistant',
        content: 'Let me look.',
        // Kept for providers that need it back (DeepSeek thinking mode); the profile decides.
        reasoning_content: 'hmm',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'search', arguments: '{"q":"c1"}' } },
          { id: 'c2', type: 'function', function: { name: 'search', arguments: 'not json' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"hits":[1]}' },
      { role: 'tool', tool_call_id: 'c2', content: 'plain text' },
    ]);
    expect(point).toMatchObject({ steps: 1, resolvedCalls: 2, pendingCalls: [], dropTextAfterSeq: 7 });
  });

  it('a failed call gets the error message the loop would have built, and a turn without text has null content', () => {
    const point = resumePointOf(
      log(start('c1'), [
        'tool_result',
        {
          call_id: 'c1',
          tool: 'search',
          ok: false,
          error: { code: 'TIMEOUT', message: 'slow' },
          duration_ms: 9,
        },
      ]),
    );
    expect(point.conversation).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'search', arguments: '{"q":"c1"}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: JSON.stringify({ error: { code: 'TIMEOUT', message: 'slow' } }),
      },
    ]);
  });

  it('a call with a tool_start but no tool_result is pending, and only the calls with results are answered', () => {
    const point = resumePointOf(log(start('c1'), start('c2'), result('c2', 'two')));
    expect(point.pendingCalls.map((call) => call.id)).toEqual(['c1']);
    expect(point.resolvedCalls).toBe(1);
    expect(point.conversation.filter((message) => message.role === 'tool')).toEqual([
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
    ]);
  });

  it('text after the last non-text event (a model call cut off) is dropped, and the drop starts after that event', () => {
    const point = resumePointOf(log(start('c1'), result('c1', 'one'), chunk('The answer i')));
    expect(point.steps).toBe(1);
    expect(point.dropTextAfterSeq).toBe(2);
    expect(JSON.stringify(point.conversation)).not.toContain('The answer i');
  });

  it("when tool_call_delta events stream between a turn's text and its tool_starts, the turn keeps its text, and deltas of a cut-off call are dropped like text", () => {
    const delta = (id: string, text: string): [EventType, unknown] => [
      'tool_call_delta',
      { call_id: id, tool: 'search', delta: text },
    ];
    const point = resumePointOf(
      log(
        chunk('Searching.'),
        delta('c1', '{"q":'),
        delta('c1', '"c1"}'),
        start('c1'),
        result('c1', 1),
        chunk('Again.'),
        delta('c2', '{"q"'),
      ),
    );
    expect(point.conversation[0]).toMatchObject({
      role: 'assistant',
      content: 'Searching.',
      tool_calls: [{ id: 'c1', function: { arguments: '{"q":"c1"}' } }],
    });
    expect(point.steps).toBe(1);
    expect(point.dropTextAfterSeq).toBe(5);
  });

  it('steps count every answered turn, and a re-run of a pending call by a later attempt is no new turn', () => {
    const point = resumePointOf(
      log(
        chunk('first'),
        start('c1'),
        result('c1', 'one'),
        start('c2'),
        { attempt: 2 },
        [
          'attempt_started',
          { drop_text_after_seq: 4, resumed_steps: 2, resumed_tool_results: 1, rerun_call_ids: ['c2'] },
        ],
        start('c2'),
        result('c2', 'two'),
        chunk('third'),
        start('c3'),
      ),
    );
    expect(point.steps).toBe(3);
    expect(point.pendingCalls.map((call) => call.id)).toEqual(['c3']);
    expect(point.resolvedCalls).toBe(2);
    expect(point.conversation.map((message) => message.role)).toEqual([
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(point.conversation.at(-1)).toMatchObject({ content: 'third' });
    expect([...point.workAttempts]).toEqual([1, 2]);
  });

  it('text an earlier attempt_started voided is not part of any turn of a later resume', () => {
    const point = resumePointOf(
      log(
        start('c1'),
        result('c1', 'one'),
        chunk('void text'),
        { attempt: 2 },
        [
          'attempt_started',
          { drop_text_after_seq: 2, resumed_steps: 1, resumed_tool_results: 1, rerun_call_ids: [] },
        ],
        chunk('kept text'),
        start('c2'),
        result('c2', 'two'),
      ),
    );
    expect(point.steps).toBe(2);
    expect(point.conversation[2]).toMatchObject({ role: 'assistant', content: 'kept text' });
    expect(JSON.stringify(point.conversation)).not.toContain('void text');
    expect(point.dropTextAfterSeq).toBe(7);
  });

  it('a resolved call whose result carries _dynamic_tools is named for a look-up, so the tools it added join again', () => {
    const point = resumePointOf(
      log(
        start('c1'),
        result('c1', { _dynamic_tools: [{ name: 'refund', description: 'd', parameters: {} }] }),
        start('c2'),
        result('c2', { other: 1 }),
      ),
    );
    expect(point.dynamicToolsLookups.map((lookup) => lookup.call.id)).toEqual(['c1']);
  });

  it('calls that started sub-tasks in earlier attempts are named (they count against the fan-out), and a call whose sub-task is still running stays pending, to re-attach', () => {
    const sub = (id: string): [EventType, unknown] => [
      'subtask_started',
      { call_id: id, tool: 'agent_x', subtask_trace_id: 'b'.repeat(32), workflow_id: 'x' },
    ];
    const point = resumePointOf(
      log(start('c1'), start('c2'), sub('c1'), sub('c2'), result('c1', 'answer'), { attempt: 2 }, sub('c2')),
    );

    expect([...point.subtaskCallIds].sort()).toEqual(['c1', 'c2']);
    expect(point.pendingCalls.map((call) => call.id)).toEqual(['c2']);
  });

  it("a call's remote task (tool_progress.remote_task_id) is named, the last one per call, so a re-run follows it", () => {
    const progress = (id: string, remote?: string): [EventType, unknown] => [
      'tool_progress',
      {
        call_id: id,
        tool: 'ask_travel',
        progress: 1,
        ...(remote === undefined ? {} : { remote_task_id: remote }),
      },
    ];
    const point = resumePointOf(
      log(
        start('c1'),
        start('c2'),
        progress('c1', 'r-1'),
        progress('c1'),
        progress('c2', 'r-2'),
        progress('c2', 'r-3'),
      ),
    );
    expect([...point.remoteTaskIds]).toEqual([
      ['c1', 'r-1'],
      ['c2', 'r-3'],
    ]);
  });

  it('an empty log resumes nothing', () => {
    expect(resumePointOf([])).toMatchObject({
      steps: 0,
      resolvedCalls: 0,
      pendingCalls: [],
      dropTextAfterSeq: 0,
    });
  });
  it("step_finished events leave the turns' text and the void text as they are, and their sum is what earlier attempts spent", () => {
    const step = (n: number, prompt: number, completion: number, cost?: number): [EventType, unknown] => [
      'step_finished',
      {
        step: n,
        usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
        ...(cost === undefined ? {} : { cost_usd: cost }),
        total_usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      },
    ];
    const point = resumePointOf(
      log(
        chunk('Let me look.'),
        step(1, 10, 5, 0.001),
        start('c1'),
        result('c1', 'hit'),
        chunk('The answer '),
        chunk('is cut off'),
        step(2, 20, 7, 0.002),
      ),
    );

    expect(point.conversation[0]).toMatchObject({ role: 'assistant', content: 'Let me look.' });
    expect(point).toMatchObject({ steps: 1, resolvedCalls: 1, dropTextAfterSeq: 4 });
    expect(point.spent).toEqual({
      usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
      costUsd: 0.003,
    });
  });
});

describe('resuming with the model that answered last', () => {
  const step = (n: number, model?: string, index?: number): [EventType, unknown] => [
    'step_finished',
    {
      step: n,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      total_usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      ...(model === undefined ? {} : { model }),
      ...(index === undefined ? {} : { model_index: index }),
    },
  ];

  it('when a fallback model answered the last turn, the resume point names its place in the list', () => {
    const point = resumePointOf(
      log(step(1, 'first', 0), start('c1'), result('c1', 'hit'), step(2, 'second', 1), start('c2')),
    );
    expect(point.lastModelIndex).toBe(1);
  });

  it('when no step names a place (a single model, or events from before fallback), there is none', () => {
    const point = resumePointOf(log(step(1, 'only'), start('c1'), result('c1', 'hit')));
    expect(point.lastModelIndex).toBeUndefined();
  });
});

describe('resuming a task that parked for approval', () => {
  const requested = (id: string): [EventType, unknown] => [
    'approval_requested',
    {
      call_id: id,
      tool: 'search',
      arguments: { q: id },
      reason: 'r',
      expires_at: '2030-01-01T00:00:00.000Z',
    },
  ];
  const decided = (id: string, approved: boolean, comment?: string): [EventType, unknown] => [
    'approval_decided',
    {
      call_id: id,
      tool: 'search',
      approved,
      decided_at: '2030-01-01T00:00:00.000Z',
      ...(comment ? { comment } : {}),
    },
  ];

  it('a requested approval without a decision awaits one; the parking attempt is not a work attempt', () => {
    const point = resumePointOf(log(start('c1'), start('c2'), result('c2', 'ok'), requested('c1')));
    expect(point.awaitingApproval).toEqual(['c1']);
    expect(point.workAttempts).toEqual(new Set());
    expect(point.lastAttempt).toBe(1);
    expect(point.pendingCalls.map((call) => call.id)).toEqual(['c1']);
  });

  it('an approved call is pending (it runs again, without asking) and stops awaiting', () => {
    const point = resumePointOf(log(start('c1'), requested('c1'), { attempt: 2 }, decided('c1', true)));
    expect(point.awaitingApproval).toEqual([]);
    expect(point.approvedCalls).toEqual(new Set(['c1']));
    expect(point.pendingCalls.map((call) => call.id)).toEqual(['c1']);
    expect(point.workAttempts).toEqual(new Set([2]));
    expect(point.lastAttempt).toBe(2);
  });

  it('a denied call is answered with the denial and its comment, even when the attempt died before writing its tool_result', () => {
    const point = resumePointOf(
      log(start('c1'), requested('c1'), { attempt: 2 }, decided('c1', false, 'not this vendor')),
    );
    expect(point.pendingCalls).toEqual([]);
    expect(point.conversation.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: JSON.stringify({
        error: { code: 'FORBIDDEN', message: 'the call was denied by an approver: not this vendor' },
      }),
    });
  });

  it('attempts that parked again and again do not add up: only the ones that ended otherwise count', () => {
    const point = resumePointOf(
      log(
        start('c1'),
        requested('c1'),
        { attempt: 2 },
        decided('c1', true),
        start('c1'),
        result('c1', 'paid'),
        start('c2'),
        requested('c2'),
        { attempt: 3 },
        decided('c2', true),
        start('c2'),
      ),
    );
    expect(point.workAttempts).toEqual(new Set([3]));
    expect(point.lastAttempt).toBe(3);
  });
});

describe('remote A2A tasks waiting for input, from the log', () => {
  const a2aStart = (id: string, args: Record<string, unknown>): [EventType, unknown] => [
    'tool_start',
    { call_id: id, tool: 'ask_travel', arguments: args },
  ];
  const askedInput = (id: string, taskId: string): [EventType, unknown] => [
    'tool_result',
    {
      call_id: id,
      tool: 'ask_travel',
      ok: false,
      error: {
        code: 'TOOL_ERROR',
        message: 'needs more input',
        detail: { task_id: taskId, state: 'input-required', context_id: `ctx-${taskId}` },
      },
      duration_ms: 5,
    },
  ];
  const answered = (id: string): [EventType, unknown] => [
    'tool_result',
    { call_id: id, tool: 'ask_travel', ok: true, result: 'booked', duration_ms: 5 },
  ];

  it('a task that asked for input waits until a call names it in continue_task_id and gets another answer; one that asked again still waits', () => {
    const point = resumePointOf(
      log(
        a2aStart('c1', { message: 'Lisbon' }),
        askedInput('c1', 'r1'),
        a2aStart('c2', { message: 'Porto' }),
        askedInput('c2', 'r2'),
        { attempt: 2 },
        a2aStart('c3', { message: 'Friday', continue_task_id: 'r1' }),
        answered('c3'),
        a2aStart('c4', { message: 'Saturday', continue_task_id: 'r2' }),
        askedInput('c4', 'r2'),
        // Another tool's failure with the same shape of detail is that tool's, not ask_travel's.
        start('c5'),
        [
          'tool_result',
          {
            call_id: 'c5',
            tool: 'search',
            ok: false,
            error: { code: 'TOOL_ERROR', message: 'x', detail: { task_id: 'r9', state: 'input-required' } },
            duration_ms: 1,
          },
        ],
      ),
    );

    expect([...point.remoteInputs]).toEqual([
      ['r2', { tool: 'ask_travel', contextId: 'ctx-r2' }],
      ['r9', { tool: 'search' }],
    ]);
  });
});
