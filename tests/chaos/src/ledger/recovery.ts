/**
 * Recovery times, read from the event log (`ts` of each stored event) and the fault driver's record.
 *
 * Executor kills: the executors do not log which tasks they run, so the victims are found from the log.
 * A task whose events move to a higher `attempt` was taken over; the attempt it left died between its
 * last sign of life (its last event, or the submission when it wrote none) and the new attempt's first
 * event. The first executor kill in that window is blamed, so the sample (kill → first event of the new
 * attempt) is the longest the evidence allows. A takeover with no executor kill in its window is
 * blamed on a NATS fault in it, or counted as unexplained.
 *
 * Takeovers, from the executors' own logs (`task attempt started`, with the task's trace id): for each
 * executor kill, the tasks that executor held (it started their latest attempt, and they had no terminal
 * event yet), and the time from the kill to each one's next sign of life: another attempt started, or an
 * event stored. This is what "running again" means; the log-only measure above blames the first kill of a
 * window that may hold several (a new holder killed before it wrote anything).
 *
 * NATS faults: for every task running when a node was killed or paused (an event before, no terminal
 * before), the time from the fault to its next event.
 *
 * A NATS fault's reach outlasts it by {@link NATS_FAULT_AFTERMATH_MS}: a request a service sent to the node
 * while it was down or paused is only given up at its timeout, after the node is back (seen: task status
 * writes sent during a pause timing out 9 s after it, holding their attempts that long).
 */
import type { TaskEvent } from '@agentmesh/protocol';
import { spread, type Spread } from './percentiles.js';

export const ServiceKind = { gateway: 'gateway', assembler: 'assembler', executor: 'executor' } as const;
export type ServiceKind = (typeof ServiceKind)[keyof typeof ServiceKind];

export interface ServiceKill {
  at: number;
  kind: ServiceKind;
  /** Which instance, e.g. `executor-2`. */
  target: string;
}

/** An executor stopped with SIGSTOP and woken with SIGCONT. */
export interface ServicePause {
  at: number;
  target: string;
  resumedAt: number;
}

export const NatsFaultKind = { kill: 'kill', pause: 'pause' } as const;
export type NatsFaultKind = (typeof NatsFaultKind)[keyof typeof NatsFaultKind];

export interface NatsFault {
  at: number;
  kind: NatsFaultKind;
  node: string;
  /** When the node was back (restarted or unpaused). */
  restoredAt: number;
}

/** How long after a NATS node is back its fault still holds requests sent during it (two request timeouts). */
export const NATS_FAULT_AFTERMATH_MS = 10_000;

export interface RecoveryInput {
  eventsByTrace: ReadonlyMap<string, readonly TaskEvent[]>;
  /** When each task was first submitted (ms since the epoch). */
  submittedAt: ReadonlyMap<string, number>;
  kills: readonly ServiceKill[];
  natsFaults: readonly NatsFault[];
}

/** An executor starting an attempt at a task, as its log says. */
export interface AttemptStart {
  /** The slot of the executor, e.g. `executor-2`. */
  slot: string;
  at: number;
  traceId: string;
  attempt: number;
}

export interface TakeoverInput {
  eventsByTrace: ReadonlyMap<string, readonly TaskEvent[]>;
  kills: readonly ServiceKill[];
  starts: readonly AttemptStart[];
  /**
   * A takeover whose interval meets one of these (a NATS node down or paused, or back for less than
   * {@link NATS_FAULT_AFTERMATH_MS}) is counted apart too.
   */
  natsFaults?: readonly NatsFault[];
}

export interface TakeoverReport {
  /** Executor kill → the next attempt start (or event) of each task it held. */
  afterExecutorKill: Spread;
  /** The same, for the takeovers during which no NATS node was down or paused. */
  withoutNatsFault: Spread;
  /** The takeovers during which a NATS node was down or paused (bounded by the cluster's own recovery). */
  duringNatsFault: Spread;
  /** Tasks an executor held when it was killed that never showed life again (the ledger's lost check judges them). */
  neverResumed: number;
  slowest: Array<{ traceId: string; target: string; ms: number }>;
}

export function takeoverTimes(input: TakeoverInput): TakeoverReport {
  const startsByTrace = new Map<string, AttemptStart[]>();
  for (const start of [...input.starts].sort((a, b) => a.at - b.at)) {
    const starts = startsByTrace.get(start.traceId) ?? [];
    starts.push(start);
    startsByTrace.set(start.traceId, starts);
  }
  const samples: Array<{ traceId: string; target: string; ms: number; natsFault: boolean }> = [];
  let neverResumed = 0;
  const natsFaultBetween = (from: number, to: number): boolean =>
    (input.natsFaults ?? []).some(
      (fault) => fault.at <= to && fault.restoredAt + NATS_FAULT_AFTERMATH_MS >= from,
    );
  for (const kill of input.kills) {
    if (kill.kind !== ServiceKind.executor) continue;
    for (const [traceId, starts] of startsByTrace) {
      const holder = starts.filter((start) => start.at < kill.at).at(-1);
      if (holder?.slot !== kill.target) continue;
      const events = (input.eventsByTrace.get(traceId) ?? []).map((event) => ({
        event,
        at: Date.parse(event.ts),
      }));
      if (events.some(({ event, at }) => at <= kill.at && (event.type === 'done' || event.type === 'error')))
        continue;
      const next = Math.min(
        starts.find((start) => start.at > kill.at)?.at ?? Infinity,
        events.find(({ at }) => at > kill.at)?.at ?? Infinity,
      );
      if (next === Infinity) neverResumed += 1;
      else
        samples.push({
          traceId,
          target: kill.target,
          ms: next - kill.at,
          natsFault: natsFaultBetween(kill.at, next),
        });
    }
  }
  return {
    afterExecutorKill: spread(samples.map((sample) => sample.ms)),
    withoutNatsFault: spread(samples.filter((sample) => !sample.natsFault).map((sample) => sample.ms)),
    duringNatsFault: spread(samples.filter((sample) => sample.natsFault).map((sample) => sample.ms)),
    neverResumed,
    slowest: [...samples]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SLOWEST_LISTED)
      .map(({ traceId, target, ms }) => ({ traceId, target, ms })),
  };
}

export interface RecoveryReport {
  /** Executor kill → first event of the attempt that took over, per task taken over. */
  afterExecutorKill: Spread;
  /** NATS node fault → next event, per task running at the fault. */
  afterNatsFault: Spread;
  /** Takeovers blamed on a NATS fault (no executor kill in their window). */
  takeoversAfterNatsFault: number;
  /** Takeovers with neither an executor kill nor a NATS fault in their window. */
  unexplainedTakeovers: number;
  /** The slowest executor-kill recoveries, for a person to look up. */
  slowest: Array<{ traceId: string; target: string; ms: number }>;
}

const SLOWEST_LISTED = 5;

export function recoveryTimes(input: RecoveryInput): RecoveryReport {
  const executorKills = input.kills
    .filter((kill) => kill.kind === ServiceKind.executor)
    .sort((a, b) => a.at - b.at);
  const samples: Array<{ traceId: string; target: string; ms: number }> = [];
  let takeoversAfterNatsFault = 0;
  let unexplainedTakeovers = 0;

  for (const [traceId, events] of input.eventsByTrace) {
    const timed = events.map((event) => ({ event, at: Date.parse(event.ts) }));
    let highestAttempt = 0;
    let lastSignOfLife = input.submittedAt.get(traceId);
    for (const { event, at } of timed) {
      if (event.attempt > highestAttempt) {
        if (highestAttempt > 0 || event.attempt > 1) {
          const since = lastSignOfLife ?? Number.NEGATIVE_INFINITY;
          const kill = executorKills.find((candidate) => candidate.at > since && candidate.at < at);
          if (kill) samples.push({ traceId, target: kill.target, ms: at - kill.at });
          else if (input.natsFaults.some((fault) => fault.at > since && fault.at < at))
            takeoversAfterNatsFault += 1;
          else unexplainedTakeovers += 1;
        }
        highestAttempt = event.attempt;
      }
      if (event.attempt === highestAttempt) lastSignOfLife = at;
    }
  }

  const afterNats: number[] = [];
  for (const fault of input.natsFaults) {
    for (const events of input.eventsByTrace.values()) {
      const times = events.map((event) => ({ event, at: Date.parse(event.ts) }));
      const before = times.filter(({ at }) => at <= fault.at);
      if (before.length === 0) continue;
      if (before.some(({ event }) => event.type === 'done' || event.type === 'error')) continue;
      const next = times.find(({ at }) => at > fault.at);
      if (next) afterNats.push(next.at - fault.at);
    }
  }

  return {
    afterExecutorKill: spread(samples.map((sample) => sample.ms)),
    afterNatsFault: spread(afterNats),
    takeoversAfterNatsFault,
    unexplainedTakeovers,
    slowest: [...samples].sort((a, b) => b.ms - a.ms).slice(0, SLOWEST_LISTED),
  };
}
