import type { TaskStatusRecord } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { hasEnded, ownershipLost, StatusConflict, statusConflict } from './attempt-status.js';

const record = (change: Partial<TaskStatusRecord>): TaskStatusRecord => ({
  trace_id: '0af7651916cd43dd8448eb211c80319c',
  account_id: 'acme',
  workflow_id: 'agent',
  status: 'running',
  attempt: 1,
  updated_at: '2026-01-01T00:00:00.000Z',
  ...change,
});

describe('attempt status rules', () => {
  it("when the task ended, no attempt's own write replaces its final status; the gateway's not-queued error (attempt 0) is no end", () => {
    expect(statusConflict(record({ status: 'done', attempt: 2 }), 3)).toBe(StatusConflict.ENDED);
    expect(statusConflict(record({ status: 'cancelled', attempt: 1 }), 1)).toBe(StatusConflict.ENDED);
    expect(hasEnded(record({ status: 'error', attempt: 0 }))).toBe(false);
    expect(statusConflict(record({ status: 'error', attempt: 0 }), 1)).toBeUndefined();
  });

  it("when a newer attempt wrote the record, an older one's write is refused", () => {
    expect(statusConflict(record({ attempt: 3 }), 2)).toBe(StatusConflict.SUPERSEDED);
    expect(statusConflict(record({ attempt: 2, status: 'queued' }), 2)).toBeUndefined();
  });

  it('when another instance runs the task, a running write is refused unless that instance was found gone', () => {
    const held = record({ executor_instance: 'aaaaaaaaaaaaaaaa' });
    expect(statusConflict(held, 2, { instance: 'bbbbbbbbbbbbbbbb' })).toBe(StatusConflict.HELD);
    expect(
      statusConflict(held, 2, { instance: 'bbbbbbbbbbbbbbbb', takenFrom: 'aaaaaaaaaaaaaaaa' }),
    ).toBeUndefined();
    expect(statusConflict(held, 2, { instance: 'aaaaaaaaaaaaaaaa' })).toBeUndefined();
  });

  it('an attempt has lost its task when it ended, a newer attempt wrote the record, or another instance runs it', () => {
    const mine = 'aaaaaaaaaaaaaaaa';
    expect(ownershipLost(record({ executor_instance: mine }), 1, mine)).toBe(false);
    expect(ownershipLost(record({ status: 'done', attempt: 2 }), 1, mine)).toBe(true);
    expect(ownershipLost(record({ attempt: 2, executor_instance: mine }), 1, mine)).toBe(true);
    expect(ownershipLost(record({ executor_instance: 'bbbbbbbbbbbbbbbb' }), 1, mine)).toBe(true);
    expect(ownershipLost(undefined, 1, mine)).toBe(false);
  });
});
