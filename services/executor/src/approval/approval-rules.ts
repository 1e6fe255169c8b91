/**
 * Which tool calls wait for a person's approval: the call's arguments against the tool's `approval`
 * policy (the assembler has folded the agent binding's rules into it). The semantics are the rule
 * language's (libs/protocol tools/approval-policy.ts), fail-safe: arguments that did not parse, and a
 * comparison the argument's value does not allow, ask for approval; a missing argument matches `ne` and
 * `not_in` only.
 */
import type { ApprovalCondition, ApprovalPolicy, ToolDefinition } from '@agentmesh/protocol';

/** A call that must wait: why (shown to the approver) and, when the policy says, how long it may wait. */
export interface ApprovalNeed {
  readonly reason: string;
  readonly timeoutMs?: number;
}

/** Whether a call of `tool` with these arguments (parsed, or the raw text that did not parse) needs approval. */
export function approvalNeeded(
  tool: Pick<ToolDefinition, 'name' | 'approval'>,
  args: Record<string, unknown> | string,
): ApprovalNeed | undefined {
  const policy = tool.approval;
  if (policy === undefined) return undefined;
  const matched = matchingRule(policy, args);
  if (matched === undefined) return undefined;
  return {
    reason: policy.reason ?? defaultReason(tool.name, matched),
    ...(policy.timeout_ms === undefined ? {} : { timeoutMs: policy.timeout_ms }),
  };
}

/** What made a call need approval, for the default reason. */
type MatchedRule =
  { kind: 'always' } | { kind: 'unparsed_arguments' } | { kind: 'condition'; condition: ApprovalCondition };

function matchingRule(
  policy: ApprovalPolicy,
  args: Record<string, unknown> | string,
): MatchedRule | undefined {
  if (policy.when === undefined) return { kind: 'always' };
  if (typeof args === 'string') return { kind: 'unparsed_arguments' };
  const condition = policy.when.find((candidate) => conditionMatches(candidate, args));
  return condition === undefined ? undefined : { kind: 'condition', condition };
}

const MISSING = Symbol('missing');

/** Whether one condition matches; a comparison the value does not allow matches (fail-safe). */
export function conditionMatches(condition: ApprovalCondition, args: Record<string, unknown>): boolean {
  const actual = valueAt(args, condition.arg);
  const { op, value } = condition;
  if (actual === MISSING) return op === 'ne' || op === 'not_in';
  switch (op) {
    case 'exists':
      return true;
    case 'eq':
    case 'ne': {
      if (!isScalar(actual)) return true;
      const equal = actual === value;
      return op === 'eq' ? equal : !equal;
    }
    case 'in':
    case 'not_in': {
      if (!isScalar(actual) || !Array.isArray(value)) return true;
      const member = value.includes(actual);
      return op === 'in' ? member : !member;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const number = asNumber(actual);
      if (number === undefined || typeof value !== 'number') return true;
      if (op === 'gt') return number > value;
      if (op === 'gte') return number >= value;
      if (op === 'lt') return number < value;
      return number <= value;
    }
  }
}

/** The value at a dot path (object keys, array indexes); MISSING when any part of the path is absent. */
function valueAt(args: Record<string, unknown>, path: string): unknown {
  let current: unknown = args;
  for (const part of path.split('.')) {
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(part)) return MISSING;
      const index = Number(part);
      if (index >= current.length) return MISSING;
      current = current[index];
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, part)) return MISSING;
      current = (current as Record<string, unknown>)[part];
    } else {
      return MISSING;
    }
  }
  return current;
}

function isScalar(value: unknown): value is string | number | boolean | null {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

/** A number, or a string that is one ("5000" from a model that quotes numbers); undefined otherwise. */
function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && value.trim() !== '') {
    const number = Number(value);
    return Number.isFinite(number) ? number : undefined;
  }
  return undefined;
}

function defaultReason(toolName: string, rule: MatchedRule): string {
  switch (rule.kind) {
    case 'always':
      return `every call of ${toolName} needs approval`;
    case 'unparsed_arguments':
      return `a call of ${toolName} needs approval: its arguments could not be read to check its rules`;
    case 'condition': {
      const { arg, op, value } = rule.condition;
      const compared = value === undefined ? '' : ` ${JSON.stringify(value)}`;
      return `a call of ${toolName} needs approval: ${arg} ${op}${compared}`;
    }
  }
}
