import { executorConsumer } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import {
  FAILED_ATTEMPT_RETRY_CAP_MS,
  failedAttemptRetryDelayMs,
  MAX_ROUTED_NATIVE_CLASSES,
  servableClassSets,
} from './task-consumer.js';

describe('servableClassSets', () => {
  it('an executor with recall and scripts serves the tasks of all four class sets, one consumer each', () => {
    const sets = servableClassSets(['RecallActionsTool', 'ExecuteScriptTool']);

    expect(sets).toEqual([
      [],
      ['ExecuteScriptTool'],
      ['RecallActionsTool'],
      ['ExecuteScriptTool', 'RecallActionsTool'],
    ]);
    expect(sets.map((classes) => executorConsumer(classes).durable_name)).toEqual([
      'executor',
      'executor-ExecuteScriptTool',
      'executor-RecallActionsTool',
      'executor-ExecuteScriptTool-RecallActionsTool',
    ]);
  });

  it('an executor without a scripts directory never reads a consumer of tasks needing execute_script', () => {
    const durables = servableClassSets(['RecallActionsTool']).map(
      (classes) => executorConsumer(classes).durable_name,
    );

    expect(durables).toEqual(['executor', 'executor-RecallActionsTool']);
  });

  it('more native classes than can be routed fail the start with a clear error', () => {
    const classes = Array.from({ length: MAX_ROUTED_NATIVE_CLASSES + 1 }, (_, index) => `Tool${index}`);

    expect(() => servableClassSets(classes)).toThrow(/at most 6 native classes, not 7/);
  });
});

describe('failedAttemptRetryDelayMs', () => {
  it('a task whose attempts keep failing waits twice as long before each delivery, up to the cap', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((delivery) => failedAttemptRetryDelayMs(delivery, 1_000));

    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(failedAttemptRetryDelayMs(1_000, 1_000)).toBe(FAILED_ATTEMPT_RETRY_CAP_MS);
  });

  it("with the consumer's default seven deliveries, a task rides out more than a minute of failures", () => {
    const waited = [1, 2, 3, 4, 5, 6].reduce(
      (total, delivery) => total + failedAttemptRetryDelayMs(delivery, 1_000),
      0,
    );

    expect(waited).toBeGreaterThan(60_000);
  });
});
