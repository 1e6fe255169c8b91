/**
 * The approvals a task waits for, folded from its events: each `approval_requested` not followed by an
 * `approval_decided` for the same call (an `attempt_started` voids nothing here: a parked task's request
 * stands until decided). What a door shows as "input required" and how a person answers it: the task API's
 * `POST /v1/tasks/{id}/approvals/{call_id}`.
 */
import { EventType, type EventData, type TaskEvent } from '@agentmesh/protocol';

export type PendingApproval = EventData<typeof EventType.APPROVAL_REQUESTED>;

export class PendingApprovals {
  readonly #waiting = new Map<string, PendingApproval>();

  /** Takes in the task's next event; true when it changed what waits. */
  add(event: TaskEvent): boolean {
    if (event.type === EventType.APPROVAL_REQUESTED) {
      this.#waiting.set(event.data.call_id, event.data);
      return true;
    }
    if (event.type === EventType.APPROVAL_DECIDED) return this.#waiting.delete(event.data.call_id);
    return false;
  }

  /** What waits, in the order it was asked. */
  get waiting(): PendingApproval[] {
    return [...this.#waiting.values()];
  }
}

/** How a door words an approval waiting, for a person reading the door's "input required" message. */
export function approvalPrompt(approval: PendingApproval): string {
  return `The tool call ${approval.tool} (${approval.call_id}) waits for approval: ${approval.reason}. Decide with POST /v1/tasks/{trace_id}/approvals/${approval.call_id} before ${approval.expires_at}.`;
}
