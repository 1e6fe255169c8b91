/**
 * The judgement of a chaos run, from what was stored and what the tool API saw, never from what the
 * clients were told: every accepted task has exactly one terminal event and it is the last; seq runs
 * 1..n with no gap; no accepted task is lost; no side effect whose result was recorded ran again; every
 * side effect appears in the log; appended chunks equal the final answer; the work queue is empty or
 * its leftovers belong to finished tasks. Pure: the runner gathers the inputs, tests craft them.
 */
import type { TaskEvent } from '@agentmesh/protocol';
import { appendedMessageText } from './message-text.js';

/** `<trace_id>:<call_id>`: the idempotency key the executor sends with an HTTP tool call. */
export function sideEffectKey(traceId: string, callId: string): string {
  return `${traceId}:${callId}`;
}

/** A message left in the MESH_TASKS work queue after the run. */
export interface WorkQueueLeftover {
  streamSeq: number;
  subject: string;
  traceId: string | undefined;
}

export interface LedgerInput {
  /** Trace ids the gateway accepted (a 2xx answer), or that have events in the log. */
  accepted: readonly string[];
  /** Every stored event of each task, in stream order (duplicates and all). */
  eventsByTrace: ReadonlyMap<string, readonly TaskEvent[]>;
  /** Stored messages of the events stream that are not a valid event: `<subject>#<seq>: reason`. */
  malformedEvents: readonly string[];
  /** Calls the tool API received, by idempotency key. */
  toolCallsByKey: ReadonlyMap<string, number>;
  /** What remained in the work queue after the run settled. */
  workQueueLeftovers: readonly WorkQueueLeftover[];
  /** The answer each task was scripted to give, when known: a done task must end with exactly it. */
  expectedAnswers?: ReadonlyMap<string, string>;
}

export const CheckName = {
  eventsParse: 'every stored event is valid',
  oneTerminal: 'exactly one terminal event, the last one',
  seqContiguous: 'seq runs 1..n without gaps',
  noTaskLost: 'no accepted task lost',
  noRepeatAfterResult: 'no side effect re-run after its result was recorded',
  sideEffectsLogged: 'every side effect appears in the log',
  chunksEqualAnswer: 'appended chunks equal the final answer',
  answerAsScripted: 'the final answer is the scripted one',
  workQueueDrained: 'work queue drained (leftovers explained)',
} as const;
export type CheckName = (typeof CheckName)[keyof typeof CheckName];

export interface CheckResult {
  name: CheckName;
  passed: boolean;
  /** How many tasks, calls or messages broke it. */
  violations: number;
  /** The first few, for a person to look up. */
  examples: string[];
}

export interface TaskTally {
  accepted: number;
  done: number;
  error: number;
  errorsByCode: Record<string, number>;
  lost: number;
  duplicatedTerminal: number;
  /** Tasks that ran more than one attempt (an `attempt` above 1 in their events). */
  redelivered: number;
  /** Tasks whose client saw a takeover marker (`attempt_started`). */
  withAttemptStarted: number;
}

export interface SideEffectTally {
  /** Calls the tool API received. */
  calls: number;
  /** Distinct idempotency keys called. */
  keys: number;
  /** Calls beyond the first, summed over keys: every re-run, recorded result or not. */
  repeats: number;
  /** `tool_start`s written after a `tool_result` of the same call: re-runs of finished work. */
  repeatsAfterResult: number;
  /** Calls the log does not account for (more calls for a key than `tool_start`s of the call). */
  unlogged: number;
}

export interface LedgerVerdict {
  tasks: TaskTally;
  sideEffects: SideEffectTally;
  workQueueLeftovers: number;
  checks: CheckResult[];
  passed: boolean;
}

const MAX_EXAMPLES = 5;

class Check {
  violations = 0;
  readonly examples: string[] = [];

  constructor(readonly name: CheckName) {}

  fail(example: string): void {
    this.violations += 1;
    if (this.examples.length < MAX_EXAMPLES) this.examples.push(example);
  }

  result(): CheckResult {
    return {
      name: this.name,
      passed: this.violations === 0,
      violations: this.violations,
      examples: this.examples,
    };
  }
}

export function judgeLedger(input: LedgerInput): LedgerVerdict {
  const checks = {
    eventsParse: new Check(CheckName.eventsParse),
    oneTerminal: new Check(CheckName.oneTerminal),
    seqContiguous: new Check(CheckName.seqContiguous),
    noTaskLost: new Check(CheckName.noTaskLost),
    noRepeatAfterResult: new Check(CheckName.noRepeatAfterResult),
    sideEffectsLogged: new Check(CheckName.sideEffectsLogged),
    chunksEqualAnswer: new Check(CheckName.chunksEqualAnswer),
    answerAsScripted: new Check(CheckName.answerAsScripted),
    workQueueDrained: new Check(CheckName.workQueueDrained),
  };
  for (const malformed of input.malformedEvents) checks.eventsParse.fail(malformed);

  const tasks: TaskTally = {
    accepted: 0,
    done: 0,
    error: 0,
    errorsByCode: {},
    lost: 0,
    duplicatedTerminal: 0,
    redelivered: 0,
    withAttemptStarted: 0,
  };
  /** tool_start count per side-effect key, from the log. */
  const startsByKey = new Map<string, number>();
  let repeatsAfterResult = 0;
  const accepted = new Set(input.accepted);
  const finished = new Set<string>();

  for (const traceId of accepted) {
    tasks.accepted += 1;
    const events = input.eventsByTrace.get(traceId) ?? [];

    const terminals = events.filter((event) => event.type === 'done' || event.type === 'error');
    const last = events.at(-1);
    if (terminals.length === 0) {
      tasks.lost += 1;
      checks.noTaskLost.fail(`${traceId}: ${events.length} events, none terminal`);
    } else {
      finished.add(traceId);
      if (terminals.length > 1) {
        tasks.duplicatedTerminal += 1;
        checks.oneTerminal.fail(`${traceId}: ${terminals.length} terminal events`);
      } else if (last !== terminals[0]) {
        checks.oneTerminal.fail(
          `${traceId}: ${last?.type} (seq ${last?.seq}) stored after the terminal event`,
        );
      }
      const terminal = terminals[0]!;
      if (terminal.type === 'done') tasks.done += 1;
      else {
        tasks.error += 1;
        tasks.errorsByCode[terminal.data.code] = (tasks.errorsByCode[terminal.data.code] ?? 0) + 1;
      }
    }

    const seqs = events.map((event) => event.seq);
    const gap = seqs.findIndex((seq, i) => seq !== i + 1);
    if (gap >= 0) {
      checks.seqContiguous.fail(
        `${traceId}: event #${gap + 1} has seq ${seqs[gap]} (seqs ${seqs.slice(Math.max(0, gap - 2), gap + 3).join(',')})`,
      );
    }
    if (events.some((event) => event.attempt > 1)) tasks.redelivered += 1;
    if (events.some((event) => event.type === 'attempt_started')) tasks.withAttemptStarted += 1;

    const resulted = new Set<string>();
    let repeatedHere = 0;
    for (const event of events) {
      if (event.type === 'tool_result') resulted.add(event.data.call_id);
      if (event.type !== 'tool_start') continue;
      const key = sideEffectKey(traceId, event.data.call_id);
      startsByKey.set(key, (startsByKey.get(key) ?? 0) + 1);
      if (resulted.has(event.data.call_id)) {
        repeatedHere += 1;
        if (repeatedHere === 1) {
          checks.noRepeatAfterResult.fail(
            `${traceId}: call ${event.data.call_id} started again (seq ${event.seq}, attempt ${event.attempt}) after its result`,
          );
        }
      }
    }
    repeatsAfterResult += repeatedHere;

    const done = terminals.length === 1 && terminals[0]?.type === 'done' ? terminals[0] : undefined;
    if (done?.type === 'done') {
      const appended = appendedMessageText(events);
      if (appended !== done.data.message) {
        checks.chunksEqualAnswer.fail(
          `${traceId}: appended ${difference(appended, done.data.message)} (done.message)`,
        );
      }
      const expected = input.expectedAnswers?.get(traceId);
      if (expected !== undefined && done.data.message !== expected) {
        checks.answerAsScripted.fail(
          `${traceId}: done ${JSON.stringify(clip(done.data.message))} ≠ scripted ${JSON.stringify(clip(expected))}`,
        );
      }
    }
  }

  const sideEffects: SideEffectTally = { calls: 0, keys: 0, repeats: 0, repeatsAfterResult, unlogged: 0 };
  for (const [key, calls] of input.toolCallsByKey) {
    sideEffects.calls += calls;
    sideEffects.keys += 1;
    sideEffects.repeats += Math.max(0, calls - 1);
    const starts = startsByKey.get(key) ?? 0;
    if (calls > starts) {
      sideEffects.unlogged += calls - starts;
      checks.sideEffectsLogged.fail(
        `${key}: ${calls} calls at the tool API, ${starts} tool_start in the log`,
      );
    }
  }

  for (const leftover of input.workQueueLeftovers) {
    if (leftover.traceId !== undefined && finished.has(leftover.traceId)) continue;
    checks.workQueueDrained.fail(
      `#${leftover.streamSeq} ${leftover.subject} (task ${leftover.traceId ?? 'unknown'}) has no terminal event`,
    );
  }

  const results = Object.values(checks).map((check) => check.result());
  return {
    tasks,
    sideEffects,
    workQueueLeftovers: input.workQueueLeftovers.length,
    checks: results,
    passed: results.every((check) => check.passed),
  };
}

/** Where two texts part, with a little context: `"…bTask 24…" ≠ "…booked…" at char 12`. */
function difference(actual: string, expected: string): string {
  let at = 0;
  while (at < actual.length && at < expected.length && actual[at] === expected[at]) at += 1;
  const around = (text: string): string => JSON.stringify(`…${text.slice(Math.max(0, at - 8), at + 16)}…`);
  return `${actual.length} chars ≠ ${expected.length}, first differing at char ${at}: ${around(actual)} vs ${around(expected)}`;
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
