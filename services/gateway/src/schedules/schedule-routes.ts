/**
 * `/v1/schedules`: an account's scheduled runs. Create, list, show (the next fire times and the last
 * runs, with their tasks' statuses), pause, resume, delete, run-now.
 *
 * Who: any caller that acts for an account, as on `/v1/tasks` — an account API key for its own account,
 * an admin key or trusted caller for the account it names in `x-account-id`. A schedule only submits
 * what its account could submit itself (every firing goes through the normal submission path as that
 * account), so it needs no more privilege than a task. Another account's schedule is a 404, as if it did
 * not exist.
 *
 * Bad input is a 400 with the zod issues (an unknown time zone, an interval ≤ 0, both or neither of cron
 * and interval) or croner's reason (an invalid cron expression); a schedule naming no agent of the
 * account or the shared catalogue is a 404, like a task naming one; so is a pin to a version the agent
 * does not keep (the same check and message as a pinned task's) and a `thread_id` that is no thread of the
 * account. A thread deleted after create makes each firing `refused` with `NOT_FOUND` (recorded on the
 * firing, shown in `last_runs`); a firing into a thread with an active run follows the thread's strategy
 * (`reject`: refused with `CONFLICT`; `enqueue`: queued behind it).
 */
import { randomBytes } from 'node:crypto';
import type { ScheduleStore, TaskStatusStore, ThreadStore } from '@agentmesh/bus';
import {
  CreateScheduleRequest,
  RunScheduleRequest,
  scheduleAgentOf,
  ScheduleDetailQuery,
  ScheduleId,
  parseWorkflowRef,
  type RunScheduleReply,
  type Schedule,
  type ScheduleDetail,
  type ScheduleList,
  type ScheduleRun,
} from '@agentmesh/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireAccount } from '../auth.js';
import { Conflict, InvalidRequest, NotFound, Rejection, sendRejection, UnknownWorkflow } from '../errors.js';
import type { PinnedVersionCheck } from '../pinned-version-check.js';
import type { AuthenticateRequest } from '../routes/request-caller.js';
import type { SchedulerClock } from './clock.js';
import { cronProblem, nextFireTimes } from './fire-times.js';
import type { Scheduler } from './scheduler.js';

export const SCHEDULES_PATH = '/v1/schedules';

export interface ScheduleRouteDeps {
  authenticate: AuthenticateRequest;
  store: ScheduleStore;
  scheduler: Scheduler;
  statuses: TaskStatusStore;
  clock: SchedulerClock;
  /** Whether the account may run an agent of this workflow id (its own, else the shared catalogue's). */
  agentExists: (accountId: string, workflowId: string) => Promise<boolean>;
  /** Refuses a pin the account's agent does not keep, as a pinned task is refused. */
  pinnedVersions?: PinnedVersionCheck;
  /** Whether a schedule's `thread_id` is a thread of its account; none: schedules cannot name a thread. */
  threads?: Pick<ThreadStore, 'get'>;
  /** Makes `events_url` absolute. */
  publicBaseUrl?: string;
}

interface IdParams {
  Params: { schedule_id: string };
}

async function callerAccount(
  authenticate: AuthenticateRequest,
  request: FastifyRequest,
): Promise<{ accountId: string; accountType?: string } | Rejection> {
  const caller = await authenticate(request);
  if (caller instanceof Rejection) return caller;
  const account = requireAccount(caller);
  if (account instanceof Rejection) return account;
  return {
    accountId: account.accountId,
    ...(account.accountType ? { accountType: account.accountType } : {}),
  };
}

function missing(scheduleId: string): NotFound {
  return new NotFound(`no schedule ${scheduleId}`);
}

export function registerScheduleRoutes(app: FastifyInstance, deps: ScheduleRouteDeps): void {
  const { store, clock } = deps;

  /** The caller's schedule the path names. */
  async function ownSchedule(request: FastifyRequest<IdParams>): Promise<Schedule | Rejection> {
    const account = await callerAccount(deps.authenticate, request);
    if (account instanceof Rejection) return account;
    const id = ScheduleId.safeParse(request.params.schedule_id);
    if (!id.success) return InvalidRequest.fromZod(id.error, 'schedule_id');
    return (await store.get(account.accountId, id.data))?.schedule ?? missing(id.data);
  }

  const nextOf = (schedule: Schedule, count: number): string[] =>
    schedule.paused ? [] : nextFireTimes(schedule, clock.now(), count).map((time) => time.toISOString());

  app.post(SCHEDULES_PATH, async (request, reply) => {
    const account = await callerAccount(deps.authenticate, request);
    if (account instanceof Rejection) return sendRejection(reply, account);
    const parsed = CreateScheduleRequest.safeParse(request.body);
    if (!parsed.success) return sendRejection(reply, InvalidRequest.fromZod(parsed.error));
    const body = parsed.data;
    if (body.cron !== undefined) {
      const problem = cronProblem(body.cron, body.timezone);
      if (problem !== undefined) {
        return sendRejection(reply, new InvalidRequest(`cron: ${problem}`, { field: 'cron', problem }));
      }
    }
    const agent = scheduleAgentOf(body.workflow_id);
    if (!(await deps.agentExists(account.accountId, agent))) {
      return sendRejection(reply, new UnknownWorkflow(account.accountId, agent));
    }
    const pin = parseWorkflowRef(body.workflow_id);
    if (pin.version !== undefined && deps.pinnedVersions !== undefined) {
      const refused = await deps.pinnedVersions(account.accountId, pin.workflow_id, pin.version);
      if (refused !== undefined) return sendRejection(reply, refused);
    }
    if (body.thread_id !== undefined) {
      if (deps.threads === undefined) {
        return sendRejection(reply, new InvalidRequest('threads are not available on this gateway'));
      }
      if ((await deps.threads.get(account.accountId, body.thread_id)) === undefined) {
        return sendRejection(reply, new NotFound(`no thread ${body.thread_id} in this account`));
      }
    }
    const now = clock.now().toISOString();
    const schedule: Schedule = {
      schedule_id: `sch_${randomBytes(10).toString('hex')}`,
      account_id: account.accountId,
      ...(account.accountType === undefined ? {} : { account_type: account.accountType }),
      ...(body.name === undefined ? {} : { name: body.name }),
      ...(body.cron === undefined ? {} : { cron: body.cron, timezone: body.timezone ?? 'UTC' }),
      ...(body.interval_seconds === undefined ? {} : { interval_seconds: body.interval_seconds }),
      workflow_id: body.workflow_id,
      input: body.input,
      ...(body.thread_id === undefined ? {} : { thread_id: body.thread_id }),
      paused: body.paused,
      missed_policy: body.missed_policy,
      created_at: now,
      updated_at: now,
      active_since: now,
    };
    if (!(await store.create(schedule))) throw new Error('a new schedule id was taken');
    return reply.code(201).send({ ...schedule, next_fire_at: nextOf(schedule, 1)[0] });
  });

  app.get(SCHEDULES_PATH, async (request, reply) => {
    const account = await callerAccount(deps.authenticate, request);
    if (account instanceof Rejection) return sendRejection(reply, account);
    const { schedules } = await store.list(account.accountId);
    const answer: ScheduleList = {
      schedules: schedules.map((schedule) => {
        const next = nextOf(schedule, 1)[0];
        return next === undefined ? schedule : { ...schedule, next_fire_at: next };
      }),
    };
    return answer;
  });

  app.get<IdParams>(`${SCHEDULES_PATH}/:schedule_id`, async (request, reply) => {
    const schedule = await ownSchedule(request);
    if (schedule instanceof Rejection) return sendRejection(reply, schedule);
    const query = ScheduleDetailQuery.safeParse(request.query ?? {});
    if (!query.success) return sendRejection(reply, InvalidRequest.fromZod(query.error));
    const firings = await store.listFirings(schedule.account_id, schedule.schedule_id, query.data.runs);
    const runs: ScheduleRun[] = await Promise.all(
      firings.map(async (firing) => {
        if (firing.trace_id === undefined) return firing;
        const status = await deps.statuses.get(schedule.account_id, firing.trace_id).catch(() => undefined);
        return status === undefined ? firing : { ...firing, status: status.status };
      }),
    );
    const answer: ScheduleDetail = {
      schedule,
      next_fire_times: nextOf(schedule, query.data.next),
      last_runs: runs,
    };
    return answer;
  });

  for (const [action, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    app.post<IdParams>(`${SCHEDULES_PATH}/:schedule_id/${action}`, async (request, reply) => {
      const found = await ownSchedule(request);
      if (found instanceof Rejection) return sendRejection(reply, found);
      const now = clock.now().toISOString();
      const changed = await store.update(found.account_id, found.schedule_id, (current) => {
        if (current.paused === paused) return undefined;
        if (paused) return { ...current, paused, updated_at: now };
        // Nothing fires for the paused stretch: fire times count from the resume on.
        const { settled_through: _dropped, ...rest } = current;
        return { ...rest, paused, updated_at: now, active_since: now };
      });
      if (changed === undefined) return sendRejection(reply, missing(found.schedule_id));
      return { ...changed, next_fire_at: nextOf(changed, 1)[0] };
    });
  }

  app.delete<IdParams>(`${SCHEDULES_PATH}/:schedule_id`, async (request, reply) => {
    const found = await ownSchedule(request);
    if (found instanceof Rejection) return sendRejection(reply, found);
    if (!(await store.remove(found.account_id, found.schedule_id))) {
      return sendRejection(reply, missing(found.schedule_id));
    }
    return reply.code(204).send();
  });

  app.post<IdParams>(`${SCHEDULES_PATH}/:schedule_id/run`, async (request, reply) => {
    const schedule = await ownSchedule(request);
    if (schedule instanceof Rejection) return sendRejection(reply, schedule);
    const body = RunScheduleRequest.safeParse(request.body ?? undefined);
    if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
    const outcome = await deps.scheduler.runNow(schedule, body.data?.idempotency_key);
    if (outcome.refused !== undefined) return sendRejection(reply, outcome.refused);
    const firing = outcome.firing;
    if (firing?.state === 'refused') {
      return sendRejection(
        reply,
        new Conflict('this run-now was refused before', { fire_at: firing.fire_at, error: firing.error }),
      );
    }
    if (firing?.trace_id === undefined) {
      return sendRejection(reply, new Conflict('this run-now is being submitted; ask again shortly'));
    }
    const answer: RunScheduleReply = {
      schedule_id: schedule.schedule_id,
      fire_at: firing.fire_at,
      trace_id: firing.trace_id,
      events_url: `${deps.publicBaseUrl ?? ''}/v1/tasks/${firing.trace_id}/events`,
      duplicate: outcome.duplicate,
    };
    return reply.code(outcome.duplicate ? 200 : 202).send(answer);
  });
}
