// Scheduled runs: an account's schedule (a cron expression in an IANA time zone, or a fixed interval) that
// submits a task for one of its agents at every fire time, and the firing records that make each fire time
// run once. Schedules live in KV `mesh_schedules` (`<account>.<schedule id>`); firings in
// `mesh_schedule_firings` (`<account>.<schedule id>.<fire key>`, created atomically: the create is the claim).
// The API is `/v1/schedules` on the gateway (see its README, "Schedules"). Cron syntax is checked by the
// gateway's cron library; here only its shape.
import { z } from 'zod';
import { WorkflowRefText } from './agent-version.js';
import { ChatMessage } from './chat.js';
import { ErrorCodeSchema } from './errors.js';
import { IdempotencyKey, IsoDateTime, UserIdInput, UserId } from './ids.js';
import { AccountId } from './names.js';
import { AccountType } from './task.js';
import { ThreadId } from './thread-id.js';
import { TraceId } from './trace-id.js';
import { JsonObject } from './tools/json-schema.js';
import { TaskStatusSchema } from './task-status.js';

/** `sch_` and 20 lower-case hex characters: one KV key token. */
export const ScheduleId = z
  .string()
  .regex(/^sch_[0-9a-f]{20}$/, 'a schedule id is sch_ and 20 hex characters');
export type ScheduleId = z.infer<typeof ScheduleId>;

/** Whether `zone` is an IANA time zone this runtime knows (Intl throws RangeError for any other). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const TimeZone = z
  .string()
  .min(1)
  .max(64)
  .refine(isTimeZone, { message: 'unknown time zone: give an IANA name such as Europe/Berlin' });

/**
 * The agent a firing runs: a workflow id, optionally pinned to a version (`workflow_id@version`, checked
 * like a task's pin: a number from 1). A pin is checked at create, and again by every firing's submission.
 */
export const ScheduleWorkflowRef = WorkflowRefText;

/** The part of `workflow_id@version` naming the agent. */
export function scheduleAgentOf(ref: string): string {
  const at = ref.indexOf('@');
  return at < 0 ? ref : ref.slice(0, at);
}

/** What happens to fire times that passed while no gateway ran (beyond the grace window). */
export const MissedFiringPolicy = z.enum(['skip', 'run_once']);
export type MissedFiringPolicy = z.infer<typeof MissedFiringPolicy>;

/** A cron expression (5 fields: minute hour day-of-month month day-of-week; `L`, `W`, `#` allowed). */
export const CronExpression = z.string().trim().min(1).max(200);

/** What a firing submits: the task's input, as `POST /v1/tasks` takes it. */
export const ScheduleInput = z.object({
  user_id: UserIdInput,
  messages: z.array(ChatMessage).min(1),
  variables: JsonObject.optional(),
});
export const StoredScheduleInput = z.object({
  user_id: UserId,
  messages: z.array(ChatMessage).min(1),
  variables: JsonObject.optional(),
});

const ScheduleTiming = {
  cron: CronExpression.optional(),
  /** The IANA zone the cron expression is read in; default UTC. Not used with `interval_seconds`. */
  timezone: TimeZone.optional(),
  /** A fixed interval instead of a cron expression: fires every N seconds from its creation. */
  interval_seconds: z
    .int()
    .positive()
    .max(366 * 24 * 3600)
    .optional(),
};

function oneTiming(
  value: { cron?: string | undefined; interval_seconds?: number | undefined; timezone?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if ((value.cron === undefined) === (value.interval_seconds === undefined)) {
    ctx.addIssue({
      code: 'custom',
      message: 'give exactly one of cron and interval_seconds',
      path: ['cron'],
    });
  }
  if (value.interval_seconds !== undefined && value.timezone !== undefined) {
    ctx.addIssue({ code: 'custom', message: 'timezone applies to cron schedules only', path: ['timezone'] });
  }
}

/** `POST /v1/schedules`. */
export const CreateScheduleRequest = z
  .strictObject({
    name: z.string().min(1).max(200).optional(),
    ...ScheduleTiming,
    workflow_id: ScheduleWorkflowRef,
    input: ScheduleInput,
    /**
     * A thread of the account every firing posts into (a task with this `thread_id`: it runs with the
     * thread's history and appends its turn, under the thread's strategy). None: each firing runs alone.
     */
    thread_id: ThreadId.optional(),
    paused: z.boolean().default(false),
    missed_policy: MissedFiringPolicy.default('skip'),
  })
  .superRefine(oneTiming);
export type CreateScheduleRequest = z.infer<typeof CreateScheduleRequest>;
export type CreateScheduleRequestInput = z.input<typeof CreateScheduleRequest>;

/** A schedule as stored in `mesh_schedules` and answered by the API. */
export const Schedule = z
  .strictObject({
    schedule_id: ScheduleId,
    account_id: AccountId,
    /** The creator's account type, given to every firing's task. */
    account_type: AccountType.optional(),
    name: z.string().min(1).max(200).optional(),
    ...ScheduleTiming,
    workflow_id: ScheduleWorkflowRef,
    input: StoredScheduleInput,
    /** The thread every firing posts into; none: each firing runs alone. */
    thread_id: ThreadId.optional(),
    paused: z.boolean(),
    missed_policy: MissedFiringPolicy,
    created_at: IsoDateTime,
    updated_at: IsoDateTime,
    /** Fire times are counted from here: creation, or the last resume (nothing fires for a paused stretch). */
    active_since: IsoDateTime,
    /** Every fire time up to here is settled (fired, skipped, or claimed by another gateway that finished it). */
    settled_through: IsoDateTime.optional(),
  })
  .superRefine(oneTiming);
export type Schedule = z.infer<typeof Schedule>;

export const FiringKind = z.enum(['scheduled', 'missed', 'manual']);
export type FiringKind = z.infer<typeof FiringKind>;

export const FiringState = z.enum(['claimed', 'submitted', 'refused']);
export type FiringState = z.infer<typeof FiringState>;

/** One firing of a schedule, in `mesh_schedule_firings`: created when claimed, then settled. */
export const ScheduleFiring = z.strictObject({
  schedule_id: ScheduleId,
  account_id: AccountId,
  /** The fire time (a run-now: when it was asked). */
  fire_at: IsoDateTime,
  kind: FiringKind,
  state: FiringState,
  claimed_at: IsoDateTime,
  /** The gateway instance holding the claim. */
  claimed_by: z.string().min(1).max(128),
  /** The submission's idempotency key: `schedule:<id>:<fire time>`, or `schedule:<id>:run:<key>`. */
  idempotency_key: IdempotencyKey,
  trace_id: TraceId.optional(),
  /** Why the submission was refused. */
  error: z.object({ code: ErrorCodeSchema, message: z.string() }).optional(),
  settled_at: IsoDateTime.optional(),
});
export type ScheduleFiring = z.infer<typeof ScheduleFiring>;

/** `GET /v1/schedules`. */
export const ScheduleListItem = Schedule.and(z.object({ next_fire_at: IsoDateTime.optional() }));
export type ScheduleListItem = z.infer<typeof ScheduleListItem>;
export const ScheduleList = z.object({ schedules: z.array(ScheduleListItem) });
export type ScheduleList = z.infer<typeof ScheduleList>;

/** A past firing as `GET /v1/schedules/:id` shows it, with its task's status when still stored. */
export const ScheduleRun = ScheduleFiring.extend({ status: TaskStatusSchema.optional() });
export type ScheduleRun = z.infer<typeof ScheduleRun>;

/** `GET /v1/schedules/:id?next=N&runs=M`. */
export const ScheduleDetail = z.object({
  schedule: Schedule,
  /** The next fire times (none while paused). */
  next_fire_times: z.array(IsoDateTime),
  /** The latest firings, newest first. */
  last_runs: z.array(ScheduleRun),
});
export type ScheduleDetail = z.infer<typeof ScheduleDetail>;

export const ScheduleDetailQuery = z.object({
  next: z.coerce.number().int().min(0).max(50).default(5),
  runs: z.coerce.number().int().min(0).max(100).default(10),
});

/** `POST /v1/schedules/:id/run`: a key makes the run-now itself idempotent (a new one each time without). */
export const RunScheduleRequest = z.strictObject({ idempotency_key: IdempotencyKey.optional() }).optional();

/** `POST /v1/schedules/:id/run`'s answer. */
export const RunScheduleReply = z.object({
  schedule_id: ScheduleId,
  fire_at: IsoDateTime,
  trace_id: TraceId,
  events_url: z.string().min(1),
  /** True when this key had fired already: the earlier firing's task. */
  duplicate: z.boolean(),
});
export type RunScheduleReply = z.infer<typeof RunScheduleReply>;
