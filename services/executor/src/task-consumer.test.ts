import { executorConsumer } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { MAX_ROUTED_NATIVE_CLASSES, servableClassSets } from './task-consumer.js';

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
