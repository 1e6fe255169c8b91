// A2A tools (remote A2A agents called as tools): the runner, and what describes them from their cards.
export { A2aToolRunner, A2A_SKILL_METADATA, A2A_IDEMPOTENCY_KEY_METADATA } from './a2a-tool-runner.js';
export type { A2aToolRunnerOptions, A2aToolRunContext, A2aTaskContext } from './a2a-tool-runner.js';
export { describeA2aTools } from './describe-a2a-tools.js';
export { RemoteInputRequests, remoteInputRequestsOf } from './remote-input-requests.js';
export type { AwaitingRemoteInput } from './remote-input-requests.js';
