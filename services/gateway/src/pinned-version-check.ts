/**
 * A submission pinning an agent version (`workflow_id@version`) is checked before it is queued: an agent
 * the account cannot see, or a version it does not keep, is 404 `NOT_FOUND` naming it, so the caller
 * hears of a mistyped pin at once instead of from the task's error event. One registry lookup (the agent as
 * the account resolves it, then that version in the same scope); unpinned submissions read nothing here.
 * The assembler checks again at assembly (a version may be pruned in between).
 */
import { accountScope, type AgentStore } from '@agentmesh/bus';
import { NotFound } from './errors.js';

/** Undefined when the account's task may run that version. */
export type PinnedVersionCheck = (
  accountId: string,
  workflowId: string,
  version: number,
) => Promise<NotFound | undefined>;

export function pinnedVersionCheck(agents: AgentStore): PinnedVersionCheck {
  return async (accountId, workflowId, version) => {
    const found = await agents.resolveVersion(accountScope(accountId), workflowId, version);
    if (!found) return new NotFound(`no agent ${workflowId}`);
    if (!found.agent) {
      return new NotFound(`agent ${workflowId} has no version ${version} (or it is no longer kept)`);
    }
    return undefined;
  };
}
