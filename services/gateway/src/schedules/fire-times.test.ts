/**
 * Fire times as croner computes them, through the gateway's wrapper: DST spring-forward and fall-back in
 * Europe/Berlin and America/New_York (fixed-time jobs run once, after a gap at its first valid time;
 * interval jobs skip the gap and run both passes of a repeated hour), `L`/`W`/`#` fields, fixed
 * intervals anchored at activation, and what is refused.
 */
import { describe, expect, it } from 'vitest';
import { cronProblem, fireTimesBetween, nextFireTimes, previousFireTime } from './fire-times.js';

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());
const cron = (expr: string, timezone: string) => ({
  cron: expr,
  timezone,
  active_since: '2020-01-01T00:00:00.000Z',
});

describe('DST in Europe/Berlin (2026: spring forward 29 March 02:00 → 03:00, fall back 25 October 03:00 → 02:00)', () => {
  it('when 02:30 does not exist, a daily 02:30 job runs at 03:00 CEST that day and at 02:30 the days around it', () => {
    const times = nextFireTimes(cron('30 2 * * *', 'Europe/Berlin'), new Date('2026-03-28T00:00:00Z'), 3);
    expect(iso(times)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST, the first valid time after the gap
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('when 02:30 happens twice, a daily 02:30 job runs once, at the first (CEST) occurrence', () => {
    const times = nextFireTimes(cron('30 2 * * *', 'Europe/Berlin'), new Date('2026-10-24T12:00:00Z'), 2);
    expect(iso(times)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
  });

  it('when the hour repeats, a every-30-minutes job runs on both passes, 2 real hours of 4 firings', () => {
    const times = fireTimesBetween(
      cron('*/30 * * * *', 'Europe/Berlin'),
      new Date('2026-10-25T00:00:00Z'), // 02:00 CEST
      new Date('2026-10-25T02:00:00Z'), // 03:00 CET
      100,
    );
    expect(iso(times)).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET (second pass)
      '2026-10-25T01:30:00.000Z', // 02:30 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
  });

  it('when the clocks spring forward, an hourly job skips the hour that does not exist', () => {
    const times = fireTimesBetween(
      cron('15 * * * *', 'Europe/Berlin'),
      new Date('2026-03-29T00:00:00Z'), // 01:00 CET
      new Date('2026-03-29T02:00:00Z'), // 04:00 CEST
      100,
    );
    expect(iso(times)).toEqual(['2026-03-29T00:15:00.000Z', '2026-03-29T01:15:00.000Z']); // 01:15 CET, 03:15 CEST
  });
});

describe('DST in America/New_York (2026: spring forward 8 March 02:00 → 03:00, fall back 1 November 02:00 → 01:00)', () => {
  it('when 02:30 does not exist, a daily 02:30 job runs at 03:00 EDT that day', () => {
    const times = nextFireTimes(cron('30 2 * * *', 'America/New_York'), new Date('2026-03-07T12:00:00Z'), 2);
    expect(iso(times)).toEqual(['2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z']);
  });

  it('when 01:30 happens twice, a daily 01:30 job runs once, at the EDT occurrence', () => {
    const times = nextFireTimes(cron('30 1 * * *', 'America/New_York'), new Date('2026-10-31T12:00:00Z'), 2);
    expect(iso(times)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
  });

  it('when weekdays at 08:00 are asked, they stay 08:00 local across the change (12:00Z then 13:00Z)', () => {
    const times = nextFireTimes(cron('0 8 * * 1-5', 'America/New_York'), new Date('2026-10-30T00:00:00Z'), 2);
    expect(iso(times)).toEqual(['2026-10-30T12:00:00.000Z', '2026-11-02T13:00:00.000Z']);
  });
});

describe('croner fields and intervals', () => {
  it('when L, W and # are used, they pick the last day, the nearest weekday and the nth weekday', () => {
    const after = new Date('2026-02-01T00:00:00Z');
    expect(iso(nextFireTimes(cron('0 9 L * *', 'UTC'), after, 1))).toEqual(['2026-02-28T09:00:00.000Z']);
    // 15 March 2026 is a Sunday: the nearest weekday is Monday 16th.
    expect(iso(nextFireTimes(cron('0 9 15W 3 *', 'UTC'), after, 1))).toEqual(['2026-03-16T09:00:00.000Z']);
    expect(iso(nextFireTimes(cron('0 9 * * MON#2', 'UTC'), after, 1))).toEqual(['2026-02-09T09:00:00.000Z']);
  });

  it('when a fire time is the starting point, the next one is strictly after it', () => {
    const times = nextFireTimes(cron('*/5 * * * *', 'UTC'), new Date('2026-01-01T00:05:00Z'), 1);
    expect(iso(times)).toEqual(['2026-01-01T00:10:00.000Z']);
  });

  it('when the schedule is a fixed interval, it fires every N seconds from activation, never before it', () => {
    const timing = { interval_seconds: 90, active_since: '2026-01-01T00:00:00.000Z' };
    expect(iso(nextFireTimes(timing, new Date('2025-12-31T00:00:00Z'), 2))).toEqual([
      '2026-01-01T00:01:30.000Z',
      '2026-01-01T00:03:00.000Z',
    ]);
    expect(
      iso(fireTimesBetween(timing, new Date('2026-01-01T00:01:30Z'), new Date('2026-01-01T00:06:00Z'), 2)),
    ).toEqual(['2026-01-01T00:04:30.000Z', '2026-01-01T00:06:00.000Z']);
  });

  it('when the expression is invalid or never fires, the reason is given', () => {
    expect(cronProblem('61 * * * *')).toMatch(/minute/);
    expect(cronProblem('* * * * * *')).toMatch(/5 parts/);
    expect(cronProblem('not cron')).toBeDefined();
    expect(cronProblem('0 0 31 2 *')).toBeDefined();
    expect(cronProblem('0 8 * * 1-5', 'Europe/Berlin')).toBeUndefined();
  });

  it('when the newest fire time before a moment is asked, it is found without a walk, and none before activation', () => {
    const minutely = cron('* * * * *', 'Europe/Berlin');
    const before = new Date('2027-01-01T00:00:00.000Z');
    expect(previousFireTime(minutely, before, new Date('2026-06-01T00:00:00Z'))?.toISOString()).toBe(
      '2026-12-31T23:59:00.000Z',
    );
    expect(previousFireTime(minutely, before, new Date('2026-12-31T23:59:00Z'))).toBeUndefined();
    // Berlin's spring-forward day: the 02:30 job's run that day was 03:00 CEST.
    const daily = cron('30 2 * * *', 'Europe/Berlin');
    expect(
      previousFireTime(
        daily,
        new Date('2027-03-29T00:00:00Z'),
        new Date('2027-01-01T00:00:00Z'),
      )?.toISOString(),
    ).toBe('2027-03-28T01:00:00.000Z');
    const interval = { interval_seconds: 90, active_since: '2026-01-01T00:00:00.000Z' };
    expect(
      previousFireTime(
        interval,
        new Date('2026-01-01T00:04:30.000Z'),
        new Date('2025-01-01T00:00:00Z'),
      )?.toISOString(),
    ).toBe('2026-01-01T00:03:00.000Z');
    expect(previousFireTime(interval, new Date('2026-01-01T00:01:30.000Z'), new Date(0))).toBeUndefined();
  });
});
