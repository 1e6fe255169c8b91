/** Token counts of several model calls added up: a task's total, and the turns of one `<ACTION>` exchange. */
import type { TokenUsage } from '@agentmesh/protocol';

/** Adds `step` into `total`. */
export function addUsage(total: TokenUsage, step: TokenUsage): void {
  total.prompt_tokens += step.prompt_tokens;
  total.completion_tokens += step.completion_tokens;
  total.total_tokens += step.total_tokens;
}
