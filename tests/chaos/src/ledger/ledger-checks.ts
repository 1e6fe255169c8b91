/**
 * The judgement of a chaos run, from what was stored and what the tool API saw, never from what the
 * clients were told: every accepted task has exactly one terminal event and it is the last; seq runs
 * 1..n with no gap; no accepted task is lost; no side effect whose result was recorded ran again; every
 * side effect appears in the log; appended chunks equal the final answer; the work queue is empty or
 * its leftovers belong to finished tasks; each task's status record says what its terminal event says;
 * a core-NATS follower of each task (subscribed before the submit) saw exactly the stored events, in
 * order, once; no task was dead-lettered by a pause (fewer of its attempts killed than MAX_DELIVER).
 * Pure: the runner gathers the inputs, tests craft them.
 */
import type { TaskEvent, TaskStatusRecord } from '@agentmesh/protocol';
import type { AttemptStart, ServiceKill, ServicePause } from './recovery.js';
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
  /**
   * Each task's status record after the run settled (`mesh_tasks`), or null when it has none. When
   * given, every task with a terminal event must have a record that says the same.
   */
  statuses?: ReadonlyMap<string, TaskStatusRecord | null>;
  /**
   * What a core-NATS subscriber of each task's `mesh.events.<account>.<trace_id>`, subscribed before the
   * submit, received, in arrival order. When given, it must be exactly the stored events.
   */
  followed?: ReadonlyMap<string, FollowedTask>;
  /** For the dead-letter check: executors' attempt starts, kills and freezes, and the executors' MAX_DELIVER. */
  deadLetters?: {
    starts: readonly AttemptStart[];
    kills: readonly ServiceKill[];
    freezes?: readonly ServicePause[];
    maxDeliver: number;
  };
}

/** One task as its core-NATS follower saw it. */
export interface FollowedTask {
  events: readonly TaskEvent[];
  /**
   * The follower's connection was disconnected, or a NATS node down, while the task ran: what it missed
   * meanwhile is explained (core NATS keeps nothing for an absent subscriber).
   */
  disconnected: boolean;
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
  statusAgrees: 'the status record agrees with the terminal event',
  followersSawStored: 'NATS followers saw only stored events, in order, once',
  followersMissedNothing: 'NATS followers missed no event (outside reconnects and NATS faults)',
  noDeadLetterByPause: 'no task dead-lettered unless MAX_DELIVER of its attempts were killed or frozen',
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
  /** Tasks whose status record disagrees with their terminal event (or is missing). */
  statusDisagreements: number;
  /** Tasks ended MAX_DELIVER_EXCEEDED with fewer than MAX_DELIVER of their attempts killed or frozen. */
  deadLetteredByPause: number;
}

export interface FollowerTally {
  /** Tasks followed on core NATS. */
  tasks: number;
  /** Events the followers received. */
  received: number;
  /** Received events that are not stored (a refused or duplicate publish that reached followers). */
  unstored: number;
  /** Stored events received again, or before one received earlier. */
  repeatedOrReordered: number;
  /** Stored events a follower never received, while its connection stayed up / across a reconnect. */
  missed: number;
  missedAcrossReconnect: number;
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
  followers: FollowerTally;
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
    statusAgrees: new Check(CheckName.statusAgrees),
    followersSawStored: new Check(CheckName.followersSawStored),
    followersMissedNothing: new Check(CheckName.followersMissedNothing),
    noDeadLetterByPause: new Check(CheckName.noDeadLetterByPause),
  };
  const followers: FollowerTally = {
    tasks: 0,
    received: 0,
    unstored: 0,
    repeatedOrReordered: 0,
    missed: 0,
    missedAcrossReconnect: 0,
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
    statusDisagreements: 0,
    deadLetteredByPause: 0,
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
      if (input.statuses !== undefined) {
        const disagreement = statusDisagreement(terminal, input.statuses.get(traceId) ?? null);
        if (disagreement !== undefined) {
          tasks.statusDisagreements += 1;
          checks.statusAgrees.fail(`${traceId}: ${disagreement}`);
        }
      }
      if (
        input.deadLetters !== undefined &&
        terminal.type === 'error' &&
        terminal.data.code === 'MAX_DELIVER_EXCEEDED'
      ) {
        const { starts, kills, freezes } = input.deadLetters;
        const killed = killedAttempts(traceId, starts, kills, freezes);
        if (killed < input.deadLetters.maxDeliver) {
          tasks.deadLetteredByPause += 1;
          checks.noDeadLetterByPause.fail(
            `${traceId}: MAX_DELIVER_EXCEEDED with ${killed} of its attempts killed or frozen (MAX_DELIVER ${input.deadLetters.maxDeliver})`,
          );
        }
      }
    }

    const followed = input.followed?.get(traceId);
    if (followed !== undefined) {
      const seen = compareFollowed(events, followed.events);
      followers.tasks += 1;
      followers.received += followed.events.length;
      followers.unstored += seen.unstored.length;
      followers.repeatedOrReordered += seen.repeatedOrReordered.length;
      if (seen.unstored.length + seen.repeatedOrReordered.length > 0) {
        const first = [...seen.unstored, ...seen.repeatedOrReordered][0]!;
        checks.followersSawStored.fail(
          `${traceId}: ${seen.unstored.length} unstored, ${seen.repeatedOrReordered.length} repeated or out of order (e.g. seq ${first.seq} attempt ${first.attempt} ${first.type})`,
        );
      }
      if (followed.disconnected) followers.missedAcrossReconnect += seen.missed;
      else if (seen.missed > 0) {
        followers.missed += seen.missed;
        checks.followersMissedNothing.fail(
          `${traceId}: ${seen.missed} of ${events.length} stored events never reached its follower`,
        );
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
    followers,
    workQueueLeftovers: input.workQueueLeftovers.length,
    checks: results,
    passed: results.every((check) => check.passed),
  };
}

/**
 * Why a task's status record does not say what its terminal event says, or undefined when it does: `done`
 * for `done`; `cancelled` for a CANCELLED error, `error` with the event's code for any other; and a
 * `last_seq`, when the record has one, that is the terminal event's.
 */
export function statusDisagreement(terminal: TaskEvent, status: TaskStatusRecord | null): string | undefined {
  if (status === null) return `no status record, terminal ${terminal.type}`;
  const expected =
    terminal.type === 'done'
      ? 'done'
      : terminal.type === 'error' && terminal.data.code === 'CANCELLED'
        ? 'cancelled'
        : 'error';
  const what = `status ${status.status} (attempt ${status.attempt}), terminal ${terminal.type} (seq ${terminal.seq}, attempt ${terminal.attempt})`;
  if (status.status !== expected) return what;
  if (terminal.type === 'error' && expected === 'error' && status.error?.code !== terminal.data.code)
    return `${what}: status error ${status.error?.code ?? 'none'}, terminal ${terminal.data.code}`;
  if (status.last_seq !== undefined && status.last_seq !== terminal.seq)
    return `${what}: status last_seq ${status.last_seq}`;
  return undefined;
}

/**
 * Lines up what a follower received with the stored events: each received event must be a stored one
 * (the same JSON), later in the log than the one received before it. What is left unmatched is missed.
 */
export function compareFollowed(
  stored: readonly TaskEvent[],
  received: readonly TaskEvent[],
): { unstored: TaskEvent[]; repeatedOrReordered: TaskEvent[]; missed: number } {
  const position = new Map(stored.map((event, i) => [canonicalJson(event), i]));
  const unstored: TaskEvent[] = [];
  const repeatedOrReordered: TaskEvent[] = [];
  let last = -1;
  let matched = 0;
  for (const event of received) {
    const at = position.get(canonicalJson(event));
    if (at === undefined) unstored.push(event);
    else if (at <= last) repeatedOrReordered.push(event);
    else {
      last = at;
      matched += 1;
    }
  }
  return { unstored, repeatedOrReordered, missed: stored.length - matched };
}

/** JSON with object keys sorted, so one event read two ways compares equal. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

/**
 * How many attempts at a task an executor fault ended: an attempt started on an executor that was killed,
 * or frozen (SIGSTOP past ack_wait: its task is rightly taken over, and the frozen attempt did its work),
 * after the start and before the task's next attempt started (or for good, for its last attempt). A NATS
 * node's fault ends none: it must never cost a task its attempts.
 */
export function killedAttempts(
  traceId: string,
  starts: readonly AttemptStart[],
  kills: readonly ServiceKill[],
  freezes: readonly ServicePause[] = [],
): number {
  const ofTask = starts.filter((start) => start.traceId === traceId).sort((a, b) => a.at - b.at);
  const faults = [...kills, ...freezes];
  return ofTask.filter((start, i) => {
    const until = ofTask[i + 1]?.at ?? Infinity;
    return faults.some((fault) => fault.target === start.slot && fault.at > start.at && fault.at < until);
  }).length;
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
