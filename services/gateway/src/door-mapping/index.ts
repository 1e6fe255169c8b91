/**
 * The mapping rules every protocol door (OpenAI chat completions, MCP, A2A, AG-UI, the Responses API)
 * shares: a task's state, its answer, the approvals it waits for. A door's own folder holds only its
 * routes and its wire format; a new door takes these as they are.
 */
export {
  DoorTaskState,
  doorStateAfter,
  doorStateOfError,
  doorStateOfStatus,
  isEndedDoorState,
} from './door-task-state.js';
export { PendingApprovals, approvalPrompt } from './pending-approvals.js';
export type { PendingApproval } from './pending-approvals.js';
export { taskAnswerOf, taskOutcomeOf } from './task-answer.js';
export type { TaskAnswer, TaskFailure } from './task-answer.js';
