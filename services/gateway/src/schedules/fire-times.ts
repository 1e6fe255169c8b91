/**
 * When a schedule fires. Cron expressions are read by croner (5 fields, minute precision; `L`, `W`, `#`;
 * day-of-month and day-of-week OR-ed as Vixie cron does) in the schedule's IANA zone, default UTC, and
 * DST transitions behave as croner documents: a fixed-time job (one value in minute and hour) whose time
 * falls in a spring-forward gap runs at the first valid time after the gap, and on a fall-back runs once,
 * at the first occurrence; an interval job (`*`, step, range or list in minute or hour) skips times in a
 * gap and runs on both occurrences of a repeated hour. A fixed interval fires every `interval_seconds`
 * from `active_since` (creation or the last resume).
 */
import { Cron } from 'croner';

export interface ScheduleTiming {
  cron?: string | undefined;
  timezone?: string | undefined;
  interval_seconds?: number | undefined;
  /** Where fire times are counted from (fixed intervals are anchored here). */
  active_since: string;
}

export const DEFAULT_TIMEZONE = 'UTC';

function cronOf(pattern: string, timezone: string | undefined): Cron {
  // paused and without a function: croner only computes, it starts no timer.
  return new Cron(pattern, { timezone: timezone ?? DEFAULT_TIMEZONE, mode: '5-part', paused: true });
}

/** Why a cron expression is refused (croner's message), or undefined when it parses. */
export function cronProblem(pattern: string, timezone?: string): string | undefined {
  try {
    const cron = cronOf(pattern, timezone);
    // Some impossible patterns (31 February) parse but never fire.
    if (cron.nextRun(new Date()) === null) return 'the expression never fires';
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The next `count` fire times strictly after `after` and after activation (activation itself never fires). */
export function nextFireTimes(timing: ScheduleTiming, after: Date, count: number): Date[] {
  if (count <= 0) return [];
  const since = new Date(timing.active_since);
  const from = after < since ? since : after;
  if (timing.interval_seconds !== undefined) {
    const step = timing.interval_seconds * 1000;
    const k = Math.floor((from.getTime() - since.getTime()) / step) + 1;
    return Array.from({ length: count }, (_, i) => new Date(since.getTime() + (k + i) * step));
  }
  if (timing.cron === undefined) return [];
  return cronOf(timing.cron, timing.timezone).nextRuns(count, from);
}

/**
 * The fire times in `(after, until]`, oldest first, at most `limit` of them (the newest are kept when
 * there are more). Walks every fire time: meant for short spans (the grace window).
 */
export function fireTimesBetween(timing: ScheduleTiming, after: Date, until: Date, limit: number): Date[] {
  const found: Date[] = [];
  let cursor = after;
  // Bounded: a schedule left unwatched for a year of minutes is walked in batches, keeping the newest.
  for (;;) {
    const batch = nextFireTimes(timing, cursor, 500).filter((time) => time <= until);
    found.push(...batch);
    if (found.length > limit) found.splice(0, found.length - limit);
    if (batch.length < 500) return found;
    cursor = batch[batch.length - 1]!;
  }
}

/** The newest fire time strictly between `after` and `before`, if any (no walk: croner counts backwards). */
export function previousFireTime(timing: ScheduleTiming, before: Date, after: Date): Date | undefined {
  const since = new Date(timing.active_since);
  const floor = after < since ? since : after;
  if (before <= floor) return undefined;
  let found: Date | undefined;
  if (timing.interval_seconds !== undefined) {
    const step = timing.interval_seconds * 1000;
    const k = Math.ceil((before.getTime() - since.getTime()) / step) - 1;
    found = k >= 1 ? new Date(since.getTime() + k * step) : undefined;
  } else if (timing.cron !== undefined) {
    found = cronOf(timing.cron, timing.timezone).previousRuns(1, before)[0];
  }
  return found !== undefined && found > floor ? found : undefined;
}
