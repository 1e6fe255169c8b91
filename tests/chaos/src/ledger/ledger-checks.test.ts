import type { TaskEvent, TaskStatusRecord } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { CheckName, judgeLedger, killedAttempts, sideEffectKey, type LedgerInput } from './ledger-checks.js';
import { appendedMessageText } from './message-text.js';

const TRACE = 'a'.repeat(32);
const OTHER = 'b'.repeat(32);
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

type Body = Pick<TaskEvent, 'type' | 'data'> & { attempt?: number; at?: number };

/** Stored events of one task, seq 1..n in order unless a test changes them. */
function log(traceId: string, bodies: readonly Body[]): TaskEvent[] {
  return bodies.map(
    (body, i) =>
      ({
        trace_id: traceId,
        seq: i + 1,
        ts: new Date(body.at ?? T0 + i * 100).toISOString(),
        attempt: body.attempt ?? 1,
        type: body.type,
        data: body.data,
      }) as TaskEvent,
  );
}

const toolStart = (attempt = 1): Body => ({
  type: 'tool_start',
  attempt,
  data: { call_id: 'c1', tool: 'book', arguments: {} },
});
const toolResult = (attempt = 1): Body => ({
  type: 'tool_result',
  attempt,
  data: { call_id: 'c1', tool: 'book', ok: true, result: {}, duration_ms: 1 },
});
const chunk = (delta: string, attempt = 1): Body => ({ type: 'message_chunk', attempt, data: { delta } });
const done = (message: string, attempt = 1): Body => ({
  type: 'done',
  attempt,
  data: {
    message,
    steps: 2,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    duration_ms: 5,
  },
});
const failed = (attempt = 1): Body => ({
  type: 'error',
  attempt,
  data: { code: 'MAX_DELIVER_EXCEEDED', message: 'x', retryable: false },
});
const attemptStarted = (attempt: number, dropAfter: number): Body => ({
  type: 'attempt_started',
  attempt,
  data: { drop_text_after_seq: dropAfter, resumed_steps: 1, resumed_tool_results: 1, rerun_call_ids: [] },
});

/** A clean run of one task: one tool call, called once, two chunks making the answer. */
function cleanInput(overrides: Partial<LedgerInput> = {}): LedgerInput {
  return {
    accepted: [TRACE],
    eventsByTrace: new Map([
      [TRACE, log(TRACE, [toolStart(), toolResult(), chunk('It is '), chunk('sunny'), done('It is sunny')])],
    ]),
    malformedEvents: [],
    toolCallsByKey: new Map([[sideEffectKey(TRACE, 'c1'), 1]]),
    workQueueLeftovers: [],
    ...overrides,
  };
}

const failing = (input: LedgerInput): string[] =>
  judgeLedger(input)
    .checks.filter((check) => !check.passed)
    .map((check) => check.name);

describe('judgeLedger', () => {
  it('when every task ran cleanly, every check passes and the tally counts one done task and one call', () => {
    const verdict = judgeLedger(cleanInput());
    expect(verdict.passed).toBe(true);
    expect(verdict.tasks).toMatchObject({ accepted: 1, done: 1, error: 0, lost: 0, duplicatedTerminal: 0 });
    expect(verdict.sideEffects).toEqual({
      calls: 1,
      keys: 1,
      repeats: 0,
      repeatsAfterResult: 0,
      unlogged: 0,
    });
  });

  it('when an accepted task has no terminal event, it is counted lost and only the loss check fails', () => {
    const verdict = judgeLedger(
      cleanInput({
        accepted: [TRACE, OTHER],
        eventsByTrace: new Map([...cleanInput().eventsByTrace, [OTHER, log(OTHER, [chunk('x')])]]),
      }),
    );
    expect(verdict.tasks.lost).toBe(1);
    expect(failing(cleanInput({ accepted: [TRACE, OTHER] }))).toEqual([CheckName.noTaskLost]);
  });

  it('when a task has two terminal events, it is counted as a duplicated terminal and the check fails', () => {
    const events = log(TRACE, [
      toolStart(),
      toolResult(),
      chunk('It is sunny'),
      done('It is sunny'),
      done('It is sunny', 2),
    ]);
    const verdict = judgeLedger(cleanInput({ eventsByTrace: new Map([[TRACE, events]]) }));
    expect(verdict.tasks.duplicatedTerminal).toBe(1);
    expect(failing(cleanInput({ eventsByTrace: new Map([[TRACE, events]]) }))).toEqual([
      CheckName.oneTerminal,
    ]);
  });

  it('when an event is stored after the terminal one, the one-terminal check fails', () => {
    const events = log(TRACE, [
      toolStart(),
      toolResult(),
      chunk('It is sunny'),
      done('It is sunny'),
      chunk('!'),
    ]);
    expect(failing(cleanInput({ eventsByTrace: new Map([[TRACE, events]]) }))).toContain(
      CheckName.oneTerminal,
    );
  });

  it('when seq skips a number or repeats one, the seq check fails', () => {
    const gap = log(TRACE, [toolStart(), toolResult(), chunk('It is sunny'), done('It is sunny')]).map(
      (event, i) => (i === 3 ? { ...event, seq: 5 } : event),
    );
    expect(failing(cleanInput({ eventsByTrace: new Map([[TRACE, gap]]) }))).toEqual([
      CheckName.seqContiguous,
    ]);
    const repeat = log(TRACE, [toolStart(), toolResult(), chunk('It is sunny'), done('It is sunny')]).map(
      (event, i) => (i === 2 ? { ...event, seq: 2 } : event),
    );
    expect(failing(cleanInput({ eventsByTrace: new Map([[TRACE, repeat]]) }))).toContain(
      CheckName.seqContiguous,
    );
  });

  it('when a call is started again after its result was written, it is a repeat after the result even if the API saw each start', () => {
    const events = log(TRACE, [
      toolStart(),
      toolResult(),
      toolStart(2),
      toolResult(2),
      chunk('It is sunny', 2),
      done('It is sunny', 2),
    ]);
    const input = cleanInput({
      eventsByTrace: new Map([[TRACE, events]]),
      toolCallsByKey: new Map([[sideEffectKey(TRACE, 'c1'), 2]]),
    });
    const verdict = judgeLedger(input);
    expect(verdict.sideEffects).toMatchObject({ calls: 2, repeats: 1, repeatsAfterResult: 1, unlogged: 0 });
    expect(failing(input)).toEqual([CheckName.noRepeatAfterResult]);
  });

  it('when a call with a start but no result is run again, it is a repeat but not one after a recorded result', () => {
    const events = log(TRACE, [
      toolStart(),
      toolStart(2),
      toolResult(2),
      chunk('It is sunny', 2),
      done('It is sunny', 2),
    ]);
    const input = cleanInput({
      eventsByTrace: new Map([[TRACE, events]]),
      toolCallsByKey: new Map([[sideEffectKey(TRACE, 'c1'), 2]]),
    });
    expect(judgeLedger(input).sideEffects).toMatchObject({ repeats: 1, repeatsAfterResult: 0 });
    expect(failing(input)).toEqual([]);
  });

  it('when the tool API saw more calls for a key than the log has tool_starts, the side effects are unlogged', () => {
    const input = cleanInput({ toolCallsByKey: new Map([[sideEffectKey(TRACE, 'c1'), 3]]) });
    expect(judgeLedger(input).sideEffects.unlogged).toBe(2);
    expect(failing(input)).toEqual([CheckName.sideEffectsLogged]);
  });

  it('when a killed attempt streamed text and the next one streamed the whole answer again without attempt_started, the chunk check fails', () => {
    const events = log(TRACE, [
      toolStart(),
      toolResult(),
      chunk('It'),
      chunk('It is sunny', 2),
      done('It is sunny', 2),
    ]);
    expect(failing(cleanInput({ eventsByTrace: new Map([[TRACE, events]]) }))).toEqual([
      CheckName.chunksEqualAnswer,
    ]);
  });

  it('when the taking-over attempt writes attempt_started, the dead attempt’s text is dropped and the chunk check passes', () => {
    // seq: 1 start, 2 result, 3 'It' (attempt 1), 4 attempt_started (drop after 2), 5 'It is sunny', 6 done.
    const events = log(TRACE, [
      toolStart(),
      toolResult(),
      chunk('It'),
      attemptStarted(2, 2),
      chunk('It is sunny', 2),
      done('It is sunny', 2),
    ]);
    const verdict = judgeLedger(cleanInput({ eventsByTrace: new Map([[TRACE, events]]) }));
    expect(verdict.passed).toBe(true);
    expect(verdict.tasks.withAttemptStarted).toBe(1);
  });

  it('when a done task’s answer is not the scripted one, the answer check fails', () => {
    expect(failing(cleanInput({ expectedAnswers: new Map([[TRACE, 'It is sunny']]) }))).toEqual([]);
    expect(failing(cleanInput({ expectedAnswers: new Map([[TRACE, 'It is raining']]) }))).toEqual([
      CheckName.answerAsScripted,
    ]);
  });

  it('when a stored event is malformed, the parse check fails', () => {
    expect(failing(cleanInput({ malformedEvents: ['mesh.events.acme.x#7: not JSON'] }))).toEqual([
      CheckName.eventsParse,
    ]);
  });

  it('when the work queue keeps a message of a finished task, it is explained; of an unfinished or unknown task, the check fails', () => {
    const kept = { streamSeq: 9, subject: 'mesh.tasks.assembled.acme', traceId: TRACE };
    expect(failing(cleanInput({ workQueueLeftovers: [kept] }))).toEqual([]);
    expect(failing(cleanInput({ workQueueLeftovers: [{ ...kept, traceId: OTHER }] }))).toEqual([
      CheckName.workQueueDrained,
    ]);
    expect(failing(cleanInput({ workQueueLeftovers: [{ ...kept, traceId: undefined }] }))).toEqual([
      CheckName.workQueueDrained,
    ]);
  });

  it('an error terminal counts as the task’s one terminal event, tallied by code', () => {
    const events = log(TRACE, [toolStart(), toolResult(), failed(4)]);
    const verdict = judgeLedger(cleanInput({ eventsByTrace: new Map([[TRACE, events]]) }));
    expect(verdict.passed).toBe(true);
    expect(verdict.tasks).toMatchObject({
      done: 0,
      error: 1,
      errorsByCode: { MAX_DELIVER_EXCEEDED: 1 },
      redelivered: 1,
    });
  });
});

describe('judgeLedger: status records, NATS followers, dead letters', () => {
  const stored = (): TaskEvent[] => cleanInput().eventsByTrace.get(TRACE)! as TaskEvent[];
  const status = (overrides: Partial<TaskStatusRecord> = {}): TaskStatusRecord => ({
    trace_id: TRACE,
    account_id: 'acme',
    workflow_id: 'chaos_agent',
    status: 'done',
    attempt: 1,
    updated_at: new Date(T0).toISOString(),
    last_seq: 5,
    ...overrides,
  });
  const withStatus = (record: TaskStatusRecord | null): LedgerInput =>
    cleanInput({ statuses: new Map([[TRACE, record]]) });

  it('when the status record says what the terminal event says, the status check passes', () => {
    const verdict = judgeLedger(withStatus(status()));
    expect(verdict.passed).toBe(true);
    expect(verdict.tasks.statusDisagreements).toBe(0);
  });

  it('when a done task’s status record went back to running (a stale attempt’s write), the status check fails and counts it', () => {
    const input = withStatus(status({ status: 'running', attempt: 1, last_seq: undefined }));
    expect(failing(input)).toEqual([CheckName.statusAgrees]);
    expect(judgeLedger(input).tasks.statusDisagreements).toBe(1);
  });

  it('when a finished task has no status record, or one with another error code or last_seq, the status check fails', () => {
    expect(failing(withStatus(null))).toEqual([CheckName.statusAgrees]);
    expect(failing(withStatus(status({ last_seq: 3 })))).toEqual([CheckName.statusAgrees]);
    const errorLog = new Map([[TRACE, log(TRACE, [toolStart(), failed(3)])]]);
    const errorStatus = status({
      status: 'error',
      last_seq: 2,
      error: { code: 'INTERNAL', message: 'x' },
    });
    expect(
      failing(cleanInput({ eventsByTrace: errorLog, statuses: new Map([[TRACE, errorStatus]]) })),
    ).toEqual([CheckName.statusAgrees]);
    const agreeing = { ...errorStatus, error: { code: 'MAX_DELIVER_EXCEEDED' as const, message: 'x' } };
    expect(failing(cleanInput({ eventsByTrace: errorLog, statuses: new Map([[TRACE, agreeing]]) }))).toEqual(
      [],
    );
  });

  it('when a task’s follower saw exactly the stored events, the follower checks pass and tally them', () => {
    const verdict = judgeLedger(
      cleanInput({ followed: new Map([[TRACE, { events: stored(), disconnected: false }]]) }),
    );
    expect(verdict.passed).toBe(true);
    expect(verdict.followers).toEqual({
      tasks: 1,
      received: 5,
      unstored: 0,
      repeatedOrReordered: 0,
      missed: 0,
      missedAcrossReconnect: 0,
    });
  });

  it('when a follower saw a stale attempt’s refused publish (a chunk with a seq the store gave another event), the stored-only check fails and counts it', () => {
    const [start, result, ...rest] = stored();
    const zombie = { ...rest[0]!, attempt: 2, data: { delta: 'zombie text' } } as TaskEvent;
    const input = cleanInput({
      followed: new Map([[TRACE, { events: [start!, result!, zombie, ...rest], disconnected: false }]]),
    });
    expect(failing(input)).toEqual([CheckName.followersSawStored]);
    expect(judgeLedger(input).followers.unstored).toBe(1);
  });

  it('when a follower saw a stored event twice or out of order, the stored-only check fails', () => {
    const events = stored();
    const twice = [...events.slice(0, 3), events[2]!, ...events.slice(3)];
    expect(
      failing(cleanInput({ followed: new Map([[TRACE, { events: twice, disconnected: false }]]) })),
    ).toEqual([CheckName.followersSawStored]);
    const swapped = [events[0]!, events[2]!, events[1]!, ...events.slice(3)];
    const verdict = judgeLedger(
      cleanInput({ followed: new Map([[TRACE, { events: swapped, disconnected: false }]]) }),
    );
    expect(verdict.followers.repeatedOrReordered).toBe(1);
    expect(verdict.checks.find((check) => check.name === CheckName.followersSawStored)?.passed).toBe(false);
  });

  it('when a follower missed a stored event with its connection up, the missed check fails; across its own reconnect it is only counted', () => {
    const missing = stored().filter((event) => event.seq !== 3);
    expect(
      failing(cleanInput({ followed: new Map([[TRACE, { events: missing, disconnected: false }]]) })),
    ).toEqual([CheckName.followersMissedNothing]);
    const acrossReconnect = judgeLedger(
      cleanInput({ followed: new Map([[TRACE, { events: missing, disconnected: true }]]) }),
    );
    expect(acrossReconnect.passed).toBe(true);
    expect(acrossReconnect.followers).toMatchObject({ missed: 0, missedAcrossReconnect: 1 });
  });

  it('when a task ended MAX_DELIVER_EXCEEDED with fewer than MAX_DELIVER of its attempts killed or frozen, the dead-letter check fails', () => {
    const events = new Map([[TRACE, log(TRACE, [toolStart(), toolStart(2), failed(3)])]]);
    const starts = [1, 2, 3].map((attempt) => ({
      slot: `executor-${attempt}`,
      at: T0 + attempt * 1_000,
      traceId: TRACE,
      attempt,
    }));
    const kill = (slot: string, at: number) => ({ at, kind: 'executor' as const, target: slot });
    const oneKill = { starts, kills: [kill('executor-1', T0 + 1_500)], maxDeliver: 3 };
    const input = cleanInput({ eventsByTrace: events, deadLetters: oneKill });
    expect(failing(input)).toEqual([CheckName.noDeadLetterByPause]);
    expect(judgeLedger(input).tasks.deadLetteredByPause).toBe(1);
    // A kill of the same executor before the attempt started, or after the next one, ended nothing of it.
    expect(
      killedAttempts(TRACE, starts, [kill('executor-2', T0 + 1_500), kill('executor-1', T0 + 2_500)]),
    ).toBe(0);

    const allKilled = {
      starts,
      kills: starts.map((start) => kill(start.slot, start.at + 500)),
      maxDeliver: 3,
    };
    expect(failing(cleanInput({ eventsByTrace: events, deadLetters: allKilled }))).toEqual([]);

    // An executor frozen past ack_wait on the first attempt, and two attempts killed: the task was rightly
    // taken over each time. A freeze before the attempt started ended nothing of it.
    const frozenThenKilled = {
      starts,
      kills: starts.slice(1).map((start) => kill(start.slot, start.at + 500)),
      freezes: [{ at: T0 + 1_500, target: 'executor-1', resumedAt: T0 + 8_500 }],
      maxDeliver: 3,
    };
    expect(failing(cleanInput({ eventsByTrace: events, deadLetters: frozenThenKilled }))).toEqual([]);
    const frozenTooEarly = {
      ...frozenThenKilled,
      freezes: [{ at: T0 + 500, target: 'executor-1', resumedAt: T0 + 7_500 }],
    };
    expect(failing(cleanInput({ eventsByTrace: events, deadLetters: frozenTooEarly }))).toEqual([
      CheckName.noDeadLetterByPause,
    ]);
  });
});

describe('appendedMessageText', () => {
  it('keeps text an earlier attempt wrote up to drop_text_after_seq and drops the rest of it', () => {
    // seq 1 'A' (attempt 1), 2 'B' (attempt 1), 3 attempt_started keeps up to 1, 4 'b!' (attempt 2).
    const events = log(TRACE, [chunk('A'), chunk('B'), attemptStarted(2, 1), chunk('b!', 2)]);
    expect(appendedMessageText(events)).toBe('Ab!');
  });

  it('with drop_text_after_seq 0, drops all earlier text but keeps the new attempt’s', () => {
    const events = log(TRACE, [chunk('A'), attemptStarted(2, 0), chunk('B', 2)]);
    expect(appendedMessageText(events)).toBe('B');
  });
});
