import { isTraceId, newTraceId } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { SubtaskFanOut } from './subtask-fan-out.js';
import { subtaskParent, subtaskTraceId } from './subtask-identity.js';

describe('subtaskTraceId', () => {
  it('when a call is run again with the same call_id, it names the same sub-task; another call or task names another', () => {
    const parent = newTraceId();
    const id = subtaskTraceId(parent, 'call_1_0');

    expect(isTraceId(id)).toBe(true);
    expect(subtaskTraceId(parent, 'call_1_0')).toBe(id);
    expect(subtaskTraceId(parent, 'call_1_1')).not.toBe(id);
    expect(subtaskTraceId(newTraceId(), 'call_1_0')).not.toBe(id);
  });
});

describe('subtaskParent', () => {
  it("when a top-level task calls an agent, the sub-task is at depth 1 in the task's own trace; its own sub-task at depth 2 in the same root trace", () => {
    const root = newTraceId();
    const first = subtaskParent({ trace_id: root }, 'a');
    const child = subtaskTraceId(root, 'a');
    const second = subtaskParent({ trace_id: child, parent: first }, 'b');

    expect(first).toEqual({ trace_id: root, call_id: 'a', root_trace_id: root, depth: 1 });
    expect(second).toEqual({ trace_id: child, call_id: 'b', root_trace_id: root, depth: 2 });
  });
});

describe('SubtaskFanOut', () => {
  it('when calls of earlier attempts filled the limit, a new call is refused but a call counted before is admitted again', () => {
    const fanOut = new SubtaskFanOut(2, ['a']);

    expect(fanOut.admit('b')).toBe(true);
    expect(fanOut.admit('c')).toBe(false);
    expect(fanOut.admit('a')).toBe(true);
    expect(fanOut.started).toBe(2);
  });
});
