import type { ApprovalPolicy } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { approvalNeeded } from './approval-rules.js';

const tool = (approval?: ApprovalPolicy) => ({ name: 'pay', ...(approval ? { approval } : {}) });

describe('which tool calls need approval', () => {
  it('a tool without a policy never asks', () => {
    expect(approvalNeeded(tool(), { amount: 1e9 })).toBeUndefined();
  });

  it('a policy without conditions asks for every call, with a default reason naming the tool', () => {
    expect(approvalNeeded(tool({}), {})).toEqual({ reason: 'every call of pay needs approval' });
  });

  it('an amount above the limit asks, one below does not; the reason names the rule', () => {
    const policy: ApprovalPolicy = { when: [{ arg: 'amount', op: 'gt', value: 1000 }], timeout_ms: 5000 };
    expect(approvalNeeded(tool(policy), { amount: 50 })).toBeUndefined();
    expect(approvalNeeded(tool(policy), { amount: 5000 })).toEqual({
      reason: 'a call of pay needs approval: amount gt 1000',
      timeoutMs: 5000,
    });
  });

  it('the policy’s own reason is shown instead of the default', () => {
    const policy: ApprovalPolicy = { when: [{ arg: 'amount', op: 'gte', value: 10 }], reason: 'money moves' };
    expect(approvalNeeded(tool(policy), { amount: 10 })?.reason).toBe('money moves');
  });

  it('dot paths reach nested objects and array items', () => {
    const policy: ApprovalPolicy = {
      when: [
        { arg: 'payment.amount', op: 'lt', value: 0 },
        { arg: 'items.1.sku', op: 'in', value: ['GOLD', 'PLATINUM'] },
      ],
    };
    expect(approvalNeeded(tool(policy), { payment: { amount: -5 } })).toBeDefined();
    expect(
      approvalNeeded(tool(policy), { payment: { amount: 5 }, items: [{ sku: 'GOLD' }] }),
    ).toBeUndefined();
    expect(
      approvalNeeded(tool(policy), { payment: { amount: 5 }, items: [{}, { sku: 'GOLD' }] }),
    ).toBeDefined();
  });

  it('a method other than GET asks (ne), and so does a missing method; eq and in never match a missing argument', () => {
    const ne: ApprovalPolicy = { when: [{ arg: 'method', op: 'ne', value: 'GET' }] };
    expect(approvalNeeded(tool(ne), { method: 'GET' })).toBeUndefined();
    expect(approvalNeeded(tool(ne), { method: 'DELETE' })).toBeDefined();
    expect(approvalNeeded(tool(ne), {})).toBeDefined();
    const notIn: ApprovalPolicy = { when: [{ arg: 'method', op: 'not_in', value: ['GET', 'HEAD'] }] };
    expect(approvalNeeded(tool(notIn), {})).toBeDefined();
    const eq: ApprovalPolicy = { when: [{ arg: 'method', op: 'eq', value: 'POST' }] };
    expect(approvalNeeded(tool(eq), {})).toBeUndefined();
    const inList: ApprovalPolicy = { when: [{ arg: 'method', op: 'in', value: ['POST'] }] };
    expect(approvalNeeded(tool(inList), {})).toBeUndefined();
    const gt: ApprovalPolicy = { when: [{ arg: 'amount', op: 'gt', value: 1 }] };
    expect(approvalNeeded(tool(gt), {})).toBeUndefined();
  });

  it('exists matches any present value, null included', () => {
    const policy: ApprovalPolicy = { when: [{ arg: 'force', op: 'exists' }] };
    expect(approvalNeeded(tool(policy), { force: null })).toBeDefined();
    expect(approvalNeeded(tool(policy), {})).toBeUndefined();
  });

  it('fail-safe: arguments that did not parse, and values a comparison does not allow, ask for approval', () => {
    const gt: ApprovalPolicy = { when: [{ arg: 'amount', op: 'gt', value: 1000 }] };
    expect(approvalNeeded(tool(gt), '{"amount": 50')?.reason).toMatch(/could not be read/);
    expect(approvalNeeded(tool(gt), { amount: 'lots' })).toBeDefined();
    expect(approvalNeeded(tool(gt), { amount: { value: 1 } })).toBeDefined();
    const eq: ApprovalPolicy = { when: [{ arg: 'to', op: 'eq', value: 'me' }] };
    expect(approvalNeeded(tool(eq), { to: ['me'] })).toBeDefined();
  });

  it('a number the model quoted is compared as a number', () => {
    const gt: ApprovalPolicy = { when: [{ arg: 'amount', op: 'gt', value: 1000 }] };
    expect(approvalNeeded(tool(gt), { amount: '50' })).toBeUndefined();
    expect(approvalNeeded(tool(gt), { amount: '5000' })).toBeDefined();
  });
});
