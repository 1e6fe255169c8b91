/**
 * The firing loop every gateway runs. Each tick lists the schedules (KV `mesh_schedules`) and, for each
 * one not paused, the fire times since what is settled. A fire time is claimed with an atomic KV create
 * of `<account>.<schedule>.<fire time ms>` in `mesh_schedule_firings`: of all gateways exactly one gets
 * it, and only that one submits. The task goes through the gateway's normal submission path (caps, rate
 * limits, the agent check, validation) acting as the schedule's account, with the idempotency key
 * `schedule:<id>:<fire time>`, so a retried submission of the same firing is a repeat and runs nothing
 * twice.
 *
 * A fire time up to `graceMs` old is on time and fires. An older one was missed (no gateway ran then):
 * policy `skip` drops it, `run_once` fires the newest missed time once (kind `missed`) and drops the
 * others. A claim whose holder died before settling it is taken over (compare-and-set) once older than
 * `claimLeaseMs`; the submission is a repeat if the first one got through. The schedule's
 * `settled_through` moves past a fire time only once it is settled here or by another gateway, so a
 * claim left behind is seen again on the next tick.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ScheduleStore } from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import {
  FiringKind,
  type Schedule,
  type ScheduleFiring,
  type SubmitTaskRequestInput,
} from '@agentmesh/protocol';
import { CallerKind } from '../auth.js';
import { Rejection } from '../errors.js';
import type { AcceptedTask, TaskSubmitter } from '../task-submission.js';
import type { SchedulerClock, TimerHandle } from './clock.js';
import { fireTimesBetween, previousFireTime } from './fire-times.js';

export interface SchedulerOptions {
  store: ScheduleStore;
  submitter: Pick<TaskSubmitter, 'submit'>;
  clock: SchedulerClock;
  /** How often the loop looks at the schedules (SCHEDULE_TICK_MS). */
  tickMs: number;
  /** How late a fire time may be and still count as on time (SCHEDULE_MISFIRE_GRACE_MS). */
  graceMs: number;
  /** How long a claim stays its holder's before another gateway may take it over. */
  claimLeaseMs: number;
  /** Names this gateway in the claims it holds. */
  instanceId?: string;
  log: Logger;
}

/** The most on-time fire times one tick fires for a schedule (the grace window bounds them anyway). */
const MAX_DUE_PER_TICK = 1000;

export interface FiringOutcome {
  /** Settled: submitted or refused, by this gateway or another. Pending: claimed and not settled yet. */
  settled: boolean;
  firing?: ScheduleFiring;
  /** The submission this gateway just made. */
  accepted?: AcceptedTask;
  /** Why this gateway's submission was refused. */
  refused?: Rejection;
  /** True when the firing existed already. */
  duplicate: boolean;
}

export function scheduledIdempotencyKey(scheduleId: string, fireAt: Date): string {
  return `schedule:${scheduleId}:${fireAt.toISOString()}`;
}

/** The fire key of a run-now: a digest of its idempotency key, so any key is one KV token. */
export function manualFireKey(key: string): string {
  return `run-${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 32)}`;
}

export class Scheduler {
  private readonly instanceId: string;
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(private readonly options: SchedulerOptions) {
    this.instanceId = options.instanceId ?? `gateway-${randomUUID()}`;
  }

  /** Starts the loop: a first tick now, then one every `tickMs` after the last ended. */
  start(): void {
    this.stopped = false;
    void this.tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.running;
  }

  /** Resolves once the tick under way (if any) has ended. */
  async settled(): Promise<void> {
    await this.running;
  }

  /** One pass over every schedule; a tick asked for while one runs is that one. */
  tick(): Promise<void> {
    this.running ??= this.runTick().finally(() => {
      this.running = undefined;
      if (!this.stopped)
        this.timer = this.options.clock.setTimer(this.options.tickMs, () => void this.tick());
    });
    return this.running;
  }

  private async runTick(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    const { log } = this.options;
    let listed: Schedule[];
    try {
      const found = await this.options.store.list();
      if (found.malformed.length > 0) {
        log.warn(
          { keys: found.malformed.slice(0, 20) },
          'schedules that do not fit the schema are not fired',
        );
      }
      listed = found.schedules;
    } catch (error) {
      log.warn({ err: error }, 'schedules could not be listed; trying again next tick');
      return;
    }
    for (const schedule of listed) {
      if (this.stopped) return;
      if (schedule.paused) continue;
      try {
        await this.runSchedule(schedule);
      } catch (error) {
        log.warn(
          { err: error, account_id: schedule.account_id, schedule_id: schedule.schedule_id },
          'schedule could not be fired; trying again next tick',
        );
      }
    }
  }

  private async runSchedule(schedule: Schedule): Promise<void> {
    const now = this.options.clock.now();
    const since = new Date(schedule.active_since);
    const from =
      schedule.settled_through !== undefined && new Date(schedule.settled_through) > since
        ? new Date(schedule.settled_through)
        : since;
    // Fire times from here on are on time; older ones were missed. Only the newest missed one matters
    // (run_once fires it, skip drops it), so a long outage is never walked fire time by fire time.
    const windowStart = new Date(now.getTime() - this.options.graceMs);
    const newestMissed = from < windowStart ? previousFireTime(schedule, windowStart, from) : undefined;
    const onTimeFrom = from >= windowStart ? from : new Date(windowStart.getTime() - 1);
    const onTime = fireTimesBetween(schedule, onTimeFrom, now, MAX_DUE_PER_TICK);
    const due: Array<{ time: Date; kind: FiringKind }> = [
      ...(newestMissed === undefined ? [] : [{ time: newestMissed, kind: FiringKind.enum.missed }]),
      ...onTime.map((time) => ({ time, kind: FiringKind.enum.scheduled })),
    ];
    if (due.length === 0) return;
    let settledThrough: Date | undefined;
    let blocked = false;
    for (const { time, kind } of due) {
      let settled = true;
      if (kind === 'scheduled' || schedule.missed_policy === 'run_once') {
        const outcome = await this.fire(schedule, String(time.getTime()), {
          fireAt: time,
          kind,
          idempotencyKey: scheduledIdempotencyKey(schedule.schedule_id, time),
        });
        settled = outcome.settled;
      } else {
        this.options.log.info(
          {
            account_id: schedule.account_id,
            schedule_id: schedule.schedule_id,
            after: from.toISOString(),
            newest_missed: time.toISOString(),
          },
          'fire times missed while no gateway ran were skipped, as the schedule says',
        );
      }
      // Settled fire times are passed over only up to the first one still pending.
      if (!settled) blocked = true;
      if (!blocked) settledThrough = time;
    }
    if (settledThrough === undefined) return;
    const through = settledThrough.toISOString();
    await this.options.store.update(schedule.account_id, schedule.schedule_id, (current) =>
      current.settled_through !== undefined && current.settled_through >= through
        ? undefined
        : { ...current, settled_through: through },
    );
  }

  /** A run-now: fires the schedule at once, idempotent by `key` (a new key when none is given). */
  async runNow(schedule: Schedule, key: string | undefined): Promise<FiringOutcome> {
    const idempotency = key ?? randomUUID();
    return this.fire(schedule, manualFireKey(idempotency), {
      fireAt: this.options.clock.now(),
      kind: 'manual',
      idempotencyKey: `schedule:${schedule.schedule_id}:run:${idempotency}`,
    });
  }

  private async fire(
    schedule: Schedule,
    fireKey: string,
    what: { fireAt: Date; kind: FiringKind; idempotencyKey: string },
  ): Promise<FiringOutcome> {
    const { store, clock, log } = this.options;
    const now = clock.now();
    let firing: ScheduleFiring = {
      schedule_id: schedule.schedule_id,
      account_id: schedule.account_id,
      fire_at: what.fireAt.toISOString(),
      kind: what.kind,
      state: 'claimed',
      claimed_at: now.toISOString(),
      claimed_by: this.instanceId,
      idempotency_key: what.idempotencyKey,
    };
    let revision = await store.claimFiring(fireKey, firing);
    if (revision === undefined) {
      const existing = await store.getFiring(schedule.account_id, schedule.schedule_id, fireKey);
      if (existing === undefined) return { settled: false, duplicate: true };
      if (existing.firing.state !== 'claimed')
        return { settled: true, firing: existing.firing, duplicate: true };
      const heldFor = now.getTime() - new Date(existing.firing.claimed_at).getTime();
      if (heldFor < this.options.claimLeaseMs)
        return { settled: false, firing: existing.firing, duplicate: true };
      // Its holder never settled it (died, or its submission was refused for now): take it over.
      firing = { ...existing.firing, claimed_at: now.toISOString(), claimed_by: this.instanceId };
      revision = await store.replaceFiring(fireKey, firing, existing.revision);
      if (revision === undefined) return { settled: false, duplicate: true };
      log.info(
        { account_id: schedule.account_id, schedule_id: schedule.schedule_id, fire_at: firing.fire_at },
        'a firing claimed by a gateway that never settled it was taken over',
      );
    }
    const body: SubmitTaskRequestInput = {
      workflow_id: schedule.workflow_id,
      user_id: schedule.input.user_id,
      messages: schedule.input.messages,
      ...(schedule.input.variables === undefined ? {} : { variables: schedule.input.variables }),
      // Posts into the thread under its own strategy; a thread deleted since is refused NOT_FOUND.
      ...(schedule.thread_id === undefined ? {} : { thread_id: schedule.thread_id }),
      idempotency_key: what.idempotencyKey,
    };
    const outcome = await this.options.submitter.submit(body, {
      kind: CallerKind.TRUSTED,
      accountId: schedule.account_id,
      ...(schedule.account_type === undefined ? {} : { accountType: schedule.account_type }),
    });
    const context = {
      account_id: schedule.account_id,
      schedule_id: schedule.schedule_id,
      fire_at: firing.fire_at,
      kind: firing.kind,
    };
    if (outcome instanceof Rejection && outcome.retryable) {
      // Left claimed, with the reason shown: after the lease this gateway or another submits it again
      // (same idempotency key) while the fire time is within the grace window; later it counts as missed.
      const error = { code: outcome.code, message: outcome.message };
      await store.replaceFiring(fireKey, { ...firing, error }, revision);
      log.warn({ ...context, code: outcome.code }, 'scheduled task refused for now; it is tried again later');
      return { settled: false, firing: { ...firing, error }, refused: outcome, duplicate: false };
    }
    const settled: ScheduleFiring =
      outcome instanceof Rejection
        ? {
            ...firing,
            state: 'refused',
            error: { code: outcome.code, message: outcome.message },
            settled_at: clock.now().toISOString(),
          }
        : {
            ...firing,
            state: 'submitted',
            trace_id: outcome.reply.trace_id,
            settled_at: clock.now().toISOString(),
          };
    await store.replaceFiring(fireKey, settled, revision);
    if (outcome instanceof Rejection) {
      log.warn({ ...context, code: outcome.code }, 'scheduled task refused');
      return { settled: true, firing: settled, refused: outcome, duplicate: false };
    }
    log.info({ ...context, trace_id: outcome.reply.trace_id }, 'scheduled task submitted');
    return { settled: true, firing: settled, accepted: outcome, duplicate: false };
  }
}
