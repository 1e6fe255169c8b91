// The small rule language a tool, or an agent's binding of a tool, uses to ask for human approval of a call.
//
// A policy without `when` asks for approval of every call. With `when`, a call needs approval when ANY
// condition matches. A condition compares one argument (a dot path into the call's arguments,
// `payment.amount`, `items.0.sku`) with a value. Fail-safe: arguments that did not parse as JSON, and a
// comparison the value does not allow (`gt` on a string that is no number), ask for approval; a missing
// argument matches `ne` and `not_in` and nothing else.
import { z } from 'zod';

export const ApprovalOperator = {
  EQ: 'eq',
  NE: 'ne',
  GT: 'gt',
  GTE: 'gte',
  LT: 'lt',
  LTE: 'lte',
  IN: 'in',
  NOT_IN: 'not_in',
  EXISTS: 'exists',
} as const;
export type ApprovalOperator = (typeof ApprovalOperator)[keyof typeof ApprovalOperator];

const ORDERING_OPERATORS: readonly ApprovalOperator[] = ['gt', 'gte', 'lt', 'lte'];
const LIST_OPERATORS: readonly ApprovalOperator[] = ['in', 'not_in'];

/** `amount`, `payment.amount`, `items.0.sku`: object keys and array indexes joined by dots. */
export const ArgumentPath = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^.\s]+(\.[^.\s]+)*$/, 'a dot path of argument names, e.g. payment.amount');

const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const ApprovalCondition = z
  .strictObject({
    arg: ArgumentPath,
    op: z.enum(ApprovalOperator),
    /** A number for gt/gte/lt/lte, a list for in/not_in, any scalar for eq/ne, none for exists. */
    value: z.union([Scalar, z.array(Scalar).max(100)]).optional(),
  })
  .superRefine((condition, ctx) => {
    const { op, value } = condition;
    const fail = (message: string) => ctx.addIssue({ code: 'custom', path: ['value'], message });
    if (op === 'exists') {
      if (value !== undefined) fail('exists takes no value');
    } else if (ORDERING_OPERATORS.includes(op)) {
      if (typeof value !== 'number') fail(`${op} compares with a number`);
    } else if (LIST_OPERATORS.includes(op)) {
      if (!Array.isArray(value)) fail(`${op} takes a list of values`);
    } else if (value === undefined || Array.isArray(value)) {
      fail(`${op} compares with one value`);
    }
  });
export type ApprovalCondition = z.infer<typeof ApprovalCondition>;

/**
 * Longest an approval may ask to wait. Executors also cut it to their events' retention (a parked task
 * lives in its event log, which must outlive the wait).
 */
export const MAX_APPROVAL_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;

export const ApprovalPolicy = z.strictObject({
  /** Absent: every call needs approval. Present: a call needs it when any condition matches. */
  when: z.array(ApprovalCondition).min(1).max(16).optional(),
  /** Shown to the approver (`approval_requested.reason`); a default names the tool and the rule. */
  reason: z.string().min(1).max(500).optional(),
  /** How long the approval may wait before the task ends with APPROVAL_TIMEOUT; the executor's default when absent. */
  timeout_ms: z.int().min(1000).max(MAX_APPROVAL_TIMEOUT_MS).optional(),
});
export type ApprovalPolicy = z.infer<typeof ApprovalPolicy>;

/**
 * An agent's approval rules for its bound tools, by the function name the model calls. They add to the
 * tool's own policy: a call needs approval when either asks for it. An agent cannot waive a tool's policy.
 */
export const ToolApprovals = z.record(z.string().min(1), ApprovalPolicy);
export type ToolApprovals = z.infer<typeof ToolApprovals>;
