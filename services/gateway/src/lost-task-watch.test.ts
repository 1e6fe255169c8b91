import { TaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { LostTaskWatch, type LostTaskWatchOptions, type WatchedTask } from './lost-task-watch.js';

const AFTER_MS = 1_000;

/** A watch over an in-memory queue where every published task is lost at once and nothing starts. */
function lossyQueue(overrides: Partial<LostTaskWatchOptions> = {}) {
  let now = 0;
  const redrives: string[] = [];
  const gaveUp: string[] = [];
  const errors: unknown[] = [];
  const queued: TaskStatusRecord = {
    trace_id: 'x',
    account_id: 'acme',
    workflow_id: 'agent',
    status: TaskStatus.QUEUED,
    attempt: 0,
    updated_at: new Date(0).toISOString(),
  };
  const watch = new LostTaskWatch({
    afterMs: AFTER_MS,
    everyMs: 3_600_000,
    maxBytes: 100,
    maxRedrives: 2,
    status: async () => queued,
    hasEvents: async () => false,
    stillQueued: async () => false,
    waiting: async () => 0,
    redrive: async (task, n) => {
      redrives.push(`${task.traceId}#${n}`);
      return 100 + n;
    },
    onGaveUp: (task) => gaveUp.push(task.traceId),
    onCheckError: (error) => errors.push(error),
    now: () => now,
    ...overrides,
  });
  const task = (traceId: string, bytes = 10): WatchedTask => ({
    accountId: 'acme',
    traceId,
    message: new Uint8Array(bytes),
  });
  /** Runs checks until `ms` later, one per AFTER_MS. */
  const advance = async (ms: number): Promise<void> => {
    for (let passed = 0; passed < ms; passed += AFTER_MS) {
      now += AFTER_MS;
      await watch.check();
    }
  };
  return { watch, task, advance, redrives, gaveUp, errors };
}

describe('the lost-task watch', () => {
  it('when a task stays lost, it is re-driven up to the limit, then given up and no longer watched', async () => {
    const { watch, task, advance, redrives, gaveUp } = lossyQueue();
    watch.published(task('t1'), 1);
    await advance(10 * AFTER_MS);
    expect(redrives).toEqual(['t1#1', 't1#2']);
    expect(gaveUp).toEqual(['t1']);
    expect(watch.size).toBe(0);
    watch.stop();
  });

  it('when its terminal event is seen, a task is forgotten, and its bytes make room for another', async () => {
    const { watch, task, advance, redrives } = lossyQueue();
    watch.published(task('big', 95), 1);
    watch.published(task('no-room', 10), 2);
    expect(watch.size).toBe(1);
    watch.ended('acme', 'big');
    watch.published(task('fits', 10), 3);
    expect(watch.size).toBe(1);
    await advance(3 * AFTER_MS);
    expect(redrives).toEqual(['fits#1']);
    watch.stop();
  });

  it('when a check cannot read the store, the task is asked again next round and the others are still checked', async () => {
    let failures = 1;
    const { watch, task, advance, redrives, errors } = lossyQueue({
      hasEvents: async (_account, traceId) => {
        if (traceId === 'flaky' && failures-- > 0) throw new Error('store away');
        return false;
      },
    });
    watch.published(task('flaky'), 1);
    watch.published(task('steady'), 2);
    await advance(2 * AFTER_MS);
    expect(errors).toHaveLength(1);
    expect(redrives).toEqual(['steady#1']);
    await advance(AFTER_MS);
    expect(redrives).toEqual(['steady#1', 'flaky#1']);
    watch.stop();
  });

  it('when turned off (0), it keeps nothing', () => {
    const { watch, task } = lossyQueue({ afterMs: 0 });
    watch.published(task('t1'), 1);
    expect(watch.size).toBe(0);
    watch.stop();
  });
});
