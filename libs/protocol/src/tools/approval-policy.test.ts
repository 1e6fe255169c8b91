import { describe, expect, it } from 'vitest';
import { ApprovalPolicy } from './approval-policy.js';

describe('ApprovalPolicy', () => {
  it('a policy without conditions (approval of every call) is valid', () => {
    expect(ApprovalPolicy.parse({})).toEqual({});
  });

  it('a rule on an amount above a limit and one on a method other than GET are valid', () => {
    const policy = {
      when: [
        { arg: 'payment.amount', op: 'gt', value: 1000 },
        { arg: 'method', op: 'not_in', value: ['GET', 'HEAD'] },
      ],
      reason: 'money leaves the account',
      timeout_ms: 60_000,
    };
    expect(ApprovalPolicy.parse(policy)).toEqual(policy);
  });

  it.each([
    [{ arg: 'amount', op: 'gt', value: '1000' }, 'gt compares with a number'],
    [{ arg: 'method', op: 'in', value: 'GET' }, 'in takes a list of values'],
    [{ arg: 'method', op: 'eq' }, 'eq compares with one value'],
    [{ arg: 'method', op: 'ne', value: ['GET'] }, 'ne compares with one value'],
    [{ arg: 'confirm', op: 'exists', value: true }, 'exists takes no value'],
    [{ arg: 'a..b', op: 'exists' }, 'a dot path'],
    [{ arg: 'amount', op: 'matches', value: '.*' }, 'Invalid option'],
  ])('the condition %j is refused: %s', (condition, message) => {
    const parsed = ApprovalPolicy.safeParse({ when: [condition] });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.message).join('; ')).toContain(message);
  });

  it('an unknown field is refused rather than ignored (a typo must not waive approval)', () => {
    expect(ApprovalPolicy.safeParse({ wehn: [{ arg: 'amount', op: 'gt', value: 1 }] }).success).toBe(false);
  });
});
