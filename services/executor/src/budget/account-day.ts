/**
 * Adding an ended task's spend to its account's day (KV `mesh_account_usage`, which the gateway's daily caps
 * read): the one rule for whoever stores a task's terminal event, an attempt's ending or the dead-letter
 * listener. Nothing spent adds nothing; a failed addition is logged, not thrown, since the task has ended
 * either way and its redelivery would not add it again.
 */
import type { TaskUsage } from '@agentmesh/bus';
import { utcDay } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';

/** Where an account's day is added to (the executor's batcher, or the store itself). */
export interface AccountDays {
  add(accountId: string, day: string, usage: TaskUsage): Promise<unknown>;
}

export async function addSpendToAccountDay(
  days: AccountDays,
  accountId: string,
  spend: TaskUsage,
  { now, log }: { now: Date; log: Logger },
): Promise<void> {
  if (spend.totalTokens === 0 && spend.costUsd === 0) return;
  try {
    await days.add(accountId, utcDay(now), spend);
  } catch (error) {
    log.error({ err: error }, "could not add the task's usage to its account's day");
  }
}
