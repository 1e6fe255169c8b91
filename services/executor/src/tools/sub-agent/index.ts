// Agents called as tools (AGENT tools, made by the assembler from an agent's `sub_agents`): each call runs
// a sub-task through the gateway and answers with its final reply.
export { SubAgentToolRunner } from './sub-agent-tool-runner.js';
export type {
  SubAgentCall,
  SubAgentToolRunnerOptions,
  SubtaskCallerContext,
  SubtaskEvent,
} from './sub-agent-tool-runner.js';
export { SubtaskFanOut } from './subtask-fan-out.js';
export { subtaskParent, subtaskTraceId } from './subtask-identity.js';
