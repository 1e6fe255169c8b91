import type { ParkedTask } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import {
  cancelApprovals,
  decideApproval,
  expireApprovals,
  isReadyToResume,
  nextApprovalExpiry,
} from './approval-decisions.js';

const T0 = new Date('2026-11-24T10:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function parked(expiries: number[]): ParkedTask {
  return {
    approvals: expiries.map((ms, index) => ({
      call_id: `call_${index + 1}`,
      tool: 'pay',
      reason: 'r',
      seq: index + 1,
      requested_at: T0.toISOString(),
      expires_at: at(ms).toISOString(),
      state: 'pending',
    })),
  } as unknown as ParkedTask;
}

describe('approval decisions', () => {
  it('a denial keeps its comment and the task is ready once no approval is pending', () => {
    const first = decideApproval(parked([60_000, 60_000]), 'call_1', { approve: true }, at(1));
    expect(first.ok && isReadyToResume(first.parked)).toBe(false);
    if (!first.ok) throw new Error('refused');
    const second = decideApproval(first.parked, 'call_2', { approve: false, comment: 'too much' }, at(2));
    if (!second.ok) throw new Error('refused');
    expect(second.parked.approvals[1]).toMatchObject({ state: 'denied', comment: 'too much' });
    expect(isReadyToResume(second.parked)).toBe(true);
  });

  it('an unknown call and a decided one are refused, naming why', () => {
    expect(decideApproval(parked([60_000]), 'call_9', { approve: true }, at(1))).toEqual({
      ok: false,
      refusal: 'unknown_call',
    });
    const decided = decideApproval(parked([60_000]), 'call_1', { approve: true }, at(1));
    if (!decided.ok) throw new Error('refused');
    expect(decideApproval(decided.parked, 'call_1', { approve: false }, at(2))).toMatchObject({
      ok: false,
      refusal: 'not_pending',
    });
  });

  it('only approvals past their expiry expire, and one expired approval makes the task ready', () => {
    const task = parked([1_000, 60_000]);
    expect(expireApprovals(task, at(999))).toBeUndefined();
    const expired = expireApprovals(task, at(1_000));
    expect(expired?.approvals.map((approval) => approval.state)).toEqual(['expired', 'pending']);
    expect(isReadyToResume(expired!)).toBe(true);
    expect(nextApprovalExpiry(expired!)).toEqual(at(60_000));
  });

  it('cancelling cancels every pending approval, and a resumed task is never ready again', () => {
    const cancelled = cancelApprovals(parked([60_000, 60_000]), at(5));
    expect(cancelled?.approvals.every((approval) => approval.state === 'cancelled')).toBe(true);
    expect(cancelApprovals(cancelled!, at(6))).toBeUndefined();
    expect(isReadyToResume({ ...cancelled!, resumed_at: at(7).toISOString() })).toBe(false);
  });
});
