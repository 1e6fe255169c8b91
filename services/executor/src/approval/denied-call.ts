/** What the model is told about a call an approver denied: a tool error carrying the approver's comment. */
import { ErrorCode } from '@agentmesh/protocol';
import type { ToolOutcome } from '../tools/tool-outcome.js';

export function deniedCallOutcome(comment: string | undefined): ToolOutcome {
  const why = comment === undefined || comment.trim() === '' ? '' : `: ${comment}`;
  return {
    ok: false,
    error: { code: ErrorCode.FORBIDDEN, message: `the call was denied by an approver${why}` },
  };
}
