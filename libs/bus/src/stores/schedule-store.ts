/**
 * Scheduled runs in KV: schedules in `mesh_schedules` (`<account>.<schedule id>`) and their firings in
 * `mesh_schedule_firings` (`<account>.<schedule id>.<fire key>`). A firing is claimed with an atomic KV
 * create, so of any number of gateways exactly one holds a fire time; it is then settled in place
 * (compare-and-set) with the task it submitted or why the submission was refused. Keys start with the
 * account, so one account's listing never reads another's.
 */
import { AccountId, Schedule, ScheduleFiring, ScheduleId } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { ScheduleContentionError } from '../errors.js';
import { isLostCompareAndSet } from '../jetstream-api-error.js';
import { decodeJson, encodeJson } from '../json.js';
import { listLatestKeys } from './latest-keys.js';

const MAX_CAS_ATTEMPTS = 10;

/** A fire key: the fire time in epoch milliseconds, or `run-<digest>` for a run-now. */
const FIRE_KEY = /^(?:[0-9]{1,16}|run-[0-9a-f]{32})$/;

export interface VersionedSchedule {
  readonly schedule: Schedule;
  readonly revision: number;
}

export interface VersionedFiring {
  readonly firing: ScheduleFiring;
  readonly revision: number;
}

function scheduleKey(accountId: string, scheduleId: string): string {
  return `${AccountId.parse(accountId)}.${ScheduleId.parse(scheduleId)}`;
}

function firingKey(accountId: string, scheduleId: string, fireKey: string): string {
  if (!FIRE_KEY.test(fireKey)) throw new Error(`not a fire key: ${fireKey}`);
  return `${scheduleKey(accountId, scheduleId)}.${fireKey}`;
}

export class ScheduleStore {
  constructor(
    private readonly schedules: KV,
    private readonly firings: KV,
  ) {}

  async get(accountId: string, scheduleId: string): Promise<VersionedSchedule | undefined> {
    const key = scheduleKey(accountId, scheduleId);
    const entry = await this.schedules.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { schedule: decodeJson(Schedule, entry.value, `mesh_schedules/${key}`), revision: entry.revision };
  }

  /** Stores a new schedule; false when its id is taken. */
  async create(schedule: Schedule): Promise<boolean> {
    const parsed = Schedule.parse(schedule);
    try {
      await this.schedules.create(scheduleKey(parsed.account_id, parsed.schedule_id), encodeJson(parsed));
      return true;
    } catch (error) {
      if ((await this.get(parsed.account_id, parsed.schedule_id)) !== undefined) return false;
      throw error;
    }
  }

  /**
   * Applies `change` to the stored schedule with compare-and-set, reading again when another writer came
   * first. `change` answering undefined leaves it as it is. Undefined when there is no such schedule.
   */
  async update(
    accountId: string,
    scheduleId: string,
    change: (current: Schedule) => Schedule | undefined,
  ): Promise<Schedule | undefined> {
    const key = scheduleKey(accountId, scheduleId);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const current = await this.get(accountId, scheduleId);
      if (current === undefined) return undefined;
      const next = change(current.schedule);
      if (next === undefined) return current.schedule;
      const parsed = Schedule.parse(next);
      if (parsed.account_id !== accountId || parsed.schedule_id !== scheduleId) {
        throw new Error(`a change of schedule ${key} produced another schedule`);
      }
      try {
        await this.schedules.update(key, encodeJson(parsed), current.revision);
        return parsed;
      } catch (error) {
        if (!isLostCompareAndSet(error)) throw error;
      }
    }
    throw new ScheduleContentionError(key, MAX_CAS_ATTEMPTS);
  }

  /** Deletes a schedule (its firings expire with the bucket's TTL); false when there was none. */
  async remove(accountId: string, scheduleId: string): Promise<boolean> {
    if ((await this.get(accountId, scheduleId)) === undefined) return false;
    await this.schedules.delete(scheduleKey(accountId, scheduleId));
    return true;
  }

  /** The schedules of one account, or of every account; entries that do not parse are skipped and named. */
  async list(accountId?: string): Promise<{ schedules: Schedule[]; malformed: string[] }> {
    const filter = accountId === undefined ? '*.*' : `${AccountId.parse(accountId)}.*`;
    const keys = await listLatestKeys(this.schedules, filter);
    const schedules: Schedule[] = [];
    const malformed: string[] = [];
    for (const key of keys) {
      const entry = await this.schedules.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      const parsed = Schedule.safeParse(safeJson(entry.string()));
      if (parsed.success) schedules.push(parsed.data);
      else malformed.push(key);
    }
    schedules.sort(
      (a, b) => a.created_at.localeCompare(b.created_at) || a.schedule_id.localeCompare(b.schedule_id),
    );
    return { schedules, malformed };
  }

  /**
   * Claims a fire time: the stored firing's revision for the one caller whose create stored it,
   * undefined for every other (the firing exists).
   */
  async claimFiring(fireKey: string, firing: ScheduleFiring): Promise<number | undefined> {
    const parsed = ScheduleFiring.parse(firing);
    const key = firingKey(parsed.account_id, parsed.schedule_id, fireKey);
    try {
      return await this.firings.create(key, encodeJson(parsed));
    } catch (error) {
      if ((await this.getFiring(parsed.account_id, parsed.schedule_id, fireKey)) !== undefined)
        return undefined;
      throw error;
    }
  }

  async getFiring(
    accountId: string,
    scheduleId: string,
    fireKey: string,
  ): Promise<VersionedFiring | undefined> {
    const key = firingKey(accountId, scheduleId, fireKey);
    const entry = await this.firings.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return {
      firing: decodeJson(ScheduleFiring, entry.value, `mesh_schedule_firings/${key}`),
      revision: entry.revision,
    };
  }

  /** Replaces a firing read at `revision`; the new revision, or undefined when another writer came first. */
  async replaceFiring(
    fireKey: string,
    firing: ScheduleFiring,
    revision: number,
  ): Promise<number | undefined> {
    const parsed = ScheduleFiring.parse(firing);
    try {
      return await this.firings.update(
        firingKey(parsed.account_id, parsed.schedule_id, fireKey),
        encodeJson(parsed),
        revision,
      );
    } catch (error) {
      if (isLostCompareAndSet(error)) return undefined;
      throw error;
    }
  }

  /** A schedule's firings still kept, newest fire time first, at most `limit`. */
  async listFirings(accountId: string, scheduleId: string, limit: number): Promise<ScheduleFiring[]> {
    const keys = await listLatestKeys(this.firings, `${scheduleKey(accountId, scheduleId)}.*`);
    const firings: ScheduleFiring[] = [];
    for (const key of keys) {
      const entry = await this.firings.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      const parsed = ScheduleFiring.safeParse(safeJson(entry.string()));
      if (parsed.success) firings.push(parsed.data);
    }
    firings.sort((a, b) => b.fire_at.localeCompare(a.fire_at) || b.claimed_at.localeCompare(a.claimed_at));
    return firings.slice(0, limit);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
