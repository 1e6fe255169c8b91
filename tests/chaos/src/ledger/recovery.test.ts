import type { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { percentile } from './percentiles.js';
import {
  NATS_FAULT_AFTERMATH_MS,
  recoveryTimes,
  takeoverTimes,
  type AttemptStart,
  type NatsFault,
  type ServiceKill,
} from './recovery.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const TRACE = 'a'.repeat(32);

/** Events at the given times (ms after T0) and attempts. */
function timeline(
  traceId: string,
  points: ReadonlyArray<[ms: number, attempt: number, type?: 'done']>,
): TaskEvent[] {
  return points.map(([ms, attempt, type], i) =>
    type === 'done'
      ? ({
          trace_id: traceId,
          seq: i + 1,
          ts: new Date(T0 + ms).toISOString(),
          attempt,
          type: 'done',
          data: {
            message: '',
            steps: 1,
            usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
            duration_ms: 0,
          },
        } as TaskEvent)
      : ({
          trace_id: traceId,
          seq: i + 1,
          ts: new Date(T0 + ms).toISOString(),
          attempt,
          type: 'message_chunk',
          data: { delta: 'x' },
        } as TaskEvent),
  );
}

const kill = (ms: number, target = 'executor-1'): ServiceKill => ({ at: T0 + ms, kind: 'executor', target });

describe('recoveryTimes', () => {
  it('measures an executor kill to the first event of the attempt that took over', () => {
    const report = recoveryTimes({
      eventsByTrace: new Map([
        [
          TRACE,
          timeline(TRACE, [
            [0, 1],
            [100, 1],
            [3_100, 2],
            [3_200, 2, 'done'],
          ]),
        ],
      ]),
      submittedAt: new Map([[TRACE, T0 - 50]]),
      kills: [kill(600)],
      natsFaults: [],
    });
    expect(report.afterExecutorKill).toMatchObject({ count: 1, p50_ms: 2_500, p99_ms: 2_500 });
    expect(report.unexplainedTakeovers).toBe(0);
  });

  it('blames the first kill after the dead attempt’s last event, so the sample is the longest the log allows', () => {
    const report = recoveryTimes({
      eventsByTrace: new Map([
        [
          TRACE,
          timeline(TRACE, [
            [0, 1],
            [5_000, 2],
          ]),
        ],
      ]),
      submittedAt: new Map(),
      kills: [kill(4_000, 'executor-2'), kill(1_000, 'executor-1')],
      natsFaults: [],
    });
    expect(report.slowest).toEqual([{ traceId: TRACE, target: 'executor-1', ms: 4_000 }]);
  });

  it('counts a task whose first attempt died before writing anything, from its submission', () => {
    const report = recoveryTimes({
      eventsByTrace: new Map([
        [
          TRACE,
          timeline(TRACE, [
            [2_000, 2],
            [2_100, 2, 'done'],
          ]),
        ],
      ]),
      submittedAt: new Map([[TRACE, T0]]),
      kills: [kill(500)],
      natsFaults: [],
    });
    expect(report.afterExecutorKill.count).toBe(1);
    expect(report.afterExecutorKill.p50_ms).toBe(1_500);
  });

  it('a takeover with no executor kill in its window is blamed on a NATS fault, or else unexplained', () => {
    const events = new Map([
      [
        TRACE,
        timeline(TRACE, [
          [0, 1],
          [4_000, 2],
        ]),
      ],
    ]);
    const fault: NatsFault = { at: T0 + 1_000, kind: 'kill', node: 'n1', restoredAt: T0 + 2_000 };
    expect(
      recoveryTimes({
        eventsByTrace: events,
        submittedAt: new Map(),
        kills: [kill(5_000)],
        natsFaults: [fault],
      }),
    ).toMatchObject({
      takeoversAfterNatsFault: 1,
      unexplainedTakeovers: 0,
      afterExecutorKill: { count: 0 },
    });
    expect(
      recoveryTimes({ eventsByTrace: events, submittedAt: new Map(), kills: [], natsFaults: [] })
        .unexplainedTakeovers,
    ).toBe(1);
  });

  it('after a NATS fault, measures each task running at the fault to its next event, and skips finished ones', () => {
    const running = timeline(TRACE, [
      [0, 1],
      [2_500, 1, 'done'],
    ]);
    const finished = timeline('b'.repeat(32), [
      [0, 1],
      [500, 1, 'done'],
    ]);
    const report = recoveryTimes({
      eventsByTrace: new Map([
        [TRACE, running],
        ['b'.repeat(32), finished],
      ]),
      submittedAt: new Map(),
      kills: [],
      natsFaults: [{ at: T0 + 1_000, kind: 'pause', node: 'n2', restoredAt: T0 + 2_000 }],
    });
    expect(report.afterNatsFault).toMatchObject({ count: 1, p50_ms: 1_500 });
  });
});

describe('percentile', () => {
  it('is nearest-rank: p99 of 1..100 is 99 and p50 is 50; none of nothing', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile([], 50)).toBeNull();
  });
});

const start = (ms: number, slot: string, attempt: number, traceId = TRACE): AttemptStart => ({
  slot,
  at: T0 + ms,
  traceId,
  attempt,
});

describe('takeoverTimes', () => {
  it('measures each kill to the next attempt start of the task the killed executor held, also when that holder is killed in turn before writing anything', () => {
    const report = takeoverTimes({
      eventsByTrace: new Map([
        [
          TRACE,
          timeline(TRACE, [
            [100, 1],
            [9_000, 3],
            [9_100, 3, 'done'],
          ]),
        ],
      ]),
      kills: [kill(1_000, 'executor-1'), kill(6_500, 'executor-2')],
      // executor-2 took the task over 4 s after the first kill and was killed itself before any event.
      starts: [start(0, 'executor-1', 1), start(5_000, 'executor-2', 2), start(8_900, 'executor-3', 3)],
    });
    expect(report.afterExecutorKill).toMatchObject({ count: 2, max_ms: 4_000 });
    expect(report.slowest.map((slow) => [slow.target, slow.ms])).toEqual([
      ['executor-1', 4_000],
      ['executor-2', 2_400],
    ]);
    expect(report.neverResumed).toBe(0);
  });

  it('leaves out tasks the killed executor no longer held: finished, or taken over by another', () => {
    const other = 'b'.repeat(32);
    const report = takeoverTimes({
      eventsByTrace: new Map([
        [
          TRACE,
          timeline(TRACE, [
            [100, 1],
            [200, 1, 'done'],
          ]),
        ],
        [
          other,
          timeline(other, [
            [100, 1],
            [3_000, 2],
            [3_100, 2, 'done'],
          ]),
        ],
      ]),
      kills: [kill(4_000, 'executor-1')],
      starts: [
        start(0, 'executor-1', 1),
        start(0, 'executor-1', 1, other),
        start(2_900, 'executor-2', 2, other),
      ],
    });
    expect(report.afterExecutorKill.count).toBe(0);
  });

  it('counts a held task that never showed life again as never resumed', () => {
    const report = takeoverTimes({
      eventsByTrace: new Map([[TRACE, timeline(TRACE, [[100, 1]])]]),
      kills: [kill(1_000, 'executor-1')],
      starts: [start(0, 'executor-1', 1)],
    });
    expect(report).toMatchObject({ neverResumed: 1, afterExecutorKill: { count: 0 } });
  });

  it('splits the takeovers by whether a NATS node was down or paused while they ran', () => {
    const other = 'c'.repeat(32);
    const report = takeoverTimes({
      eventsByTrace: new Map([
        [
          TRACE,
          timeline(TRACE, [
            [100, 1],
            [4_000, 2],
          ]),
        ],
        [
          other,
          timeline(other, [
            [100, 1],
            [20_000, 2],
          ]),
        ],
      ]),
      kills: [kill(1_000, 'executor-1'), kill(10_000, 'executor-2')],
      starts: [start(0, 'executor-1', 1), start(0, 'executor-2', 1, other)],
      natsFaults: [{ at: T0 + 12_000, kind: 'kill', node: 'n2', restoredAt: T0 + 16_000 }],
    });
    expect(report.withoutNatsFault).toMatchObject({ count: 1, max_ms: 3_000 });
    expect(report.duringNatsFault).toMatchObject({ count: 1, max_ms: 10_000 });
    expect(report.afterExecutorKill.count).toBe(2);
  });

  it('a takeover that begins within the aftermath of a NATS fault counts as during it, one that begins later does not', () => {
    const late = 'd'.repeat(32);
    const report = takeoverTimes({
      eventsByTrace: new Map([
        [
          TRACE,
          timeline(TRACE, [
            [100, 1],
            [30_000, 2],
          ]),
        ],
        [
          late,
          timeline(late, [
            [100, 1],
            [45_000, 2],
          ]),
        ],
      ]),
      // A pause from 10 s to 15 s reaches to 25 s: the kill at 20 s is within it, the one after it not.
      kills: [kill(20_000, 'executor-1'), kill(15_000 + NATS_FAULT_AFTERMATH_MS + 1_000, 'executor-2')],
      starts: [start(0, 'executor-1', 1), start(0, 'executor-2', 1, late)],
      natsFaults: [{ at: T0 + 10_000, kind: 'pause', node: 'n1', restoredAt: T0 + 15_000 }],
    });
    expect(report.duringNatsFault).toMatchObject({ count: 1, max_ms: 10_000 });
    expect(report.withoutNatsFault).toMatchObject({ count: 1 });
  });
});
