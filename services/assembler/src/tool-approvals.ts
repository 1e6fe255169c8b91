/**
 * An agent's approval rules for its bound tools (`AgentDefinition.tool_approvals`) folded into the tools
 * the task carries: the executor reads one policy per tool, and a call needs approval when the tool's own
 * policy or the binding's asks for it (an agent cannot waive a tool's policy).
 */
import type { ApprovalPolicy, ToolApprovals, ToolDefinition } from '@agentmesh/protocol';

/** Most conditions a policy holds (ApprovalPolicy.when); a union beyond it asks for every call. */
const MAX_CONDITIONS = 16;
const MAX_REASON = 500;

export function withBindingApprovals(
  tools: readonly ToolDefinition[],
  bindings: ToolApprovals | undefined,
): ToolDefinition[] {
  if (bindings === undefined) return [...tools];
  return tools.map((tool) => {
    const binding = Object.hasOwn(bindings, tool.name) ? bindings[tool.name] : undefined;
    if (binding === undefined) return tool;
    return { ...tool, approval: combinedPolicy(tool.approval, binding) };
  });
}

/** One policy that matches whenever either does: "always" if either is, else the union of conditions. */
export function combinedPolicy(own: ApprovalPolicy | undefined, binding: ApprovalPolicy): ApprovalPolicy {
  if (own === undefined) return binding;
  const reasons = [...new Set([own.reason, binding.reason].filter((r): r is string => r !== undefined))];
  const timeouts = [own.timeout_ms, binding.timeout_ms].filter((t): t is number => t !== undefined);
  const when =
    own.when === undefined || binding.when === undefined ? undefined : [...own.when, ...binding.when];
  return {
    // More conditions than a policy holds: asking for every call is the safe side.
    ...(when === undefined || when.length > MAX_CONDITIONS ? {} : { when }),
    ...(reasons.length === 0 ? {} : { reason: reasons.join('; ').slice(0, MAX_REASON) }),
    ...(timeouts.length === 0 ? {} : { timeout_ms: Math.min(...timeouts) }),
  };
}
