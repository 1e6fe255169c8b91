import { describe, expect, it } from 'vitest';
import { toolFailure, toolSuccess, type ToolOutcome } from '../tool-outcome.js';
import { RemoteInputRequests } from './remote-input-requests.js';

const asked = (taskId: string): ToolOutcome =>
  toolFailure('TOOL_ERROR', 'needs more input: which day?', {
    task_id: taskId,
    state: 'input-required',
    context_id: `ctx-${taskId}`,
  });
const answer = (taskId: string) => ({ message: 'Friday', continue_task_id: taskId });

describe('the remote A2A tasks of a task waiting for input', () => {
  it('a task that asked waits for its own tool only, with its context', () => {
    const requests = new RemoteInputRequests();
    requests.note('ask_travel', { message: 'Lisbon' }, asked('r1'));

    expect(requests.waitingFor('ask_travel', 'r1')).toEqual({ tool: 'ask_travel', contextId: 'ctx-r1' });
    expect(requests.waitingFor('ask_bank', 'r1')).toBeUndefined();
    expect(requests.waitingFor('ask_travel', 'r2')).toBeUndefined();
  });

  it('an answer that reached the task ends its wait: its result, or a failure that names it; asking again keeps it waiting', () => {
    const requests = new RemoteInputRequests();
    for (const id of ['r1', 'r2', 'r3']) requests.note('ask_travel', { message: 'go' }, asked(id));

    requests.note('ask_travel', answer('r1'), toolSuccess('booked'));
    requests.note(
      'ask_travel',
      answer('r2'),
      toolFailure('TOOL_ERROR', 'failed', { task_id: 'r2', state: 'failed' }),
    );
    requests.note('ask_travel', answer('r3'), asked('r3'));

    expect([...requests.waiting.keys()]).toEqual(['r3']);
  });

  it('a refused answer, one that never reached the agent, or one made with another tool leaves the task waiting', () => {
    const requests = new RemoteInputRequests();
    requests.note('ask_travel', { message: 'go' }, asked('r1'));

    requests.note(
      'ask_travel',
      answer('r1'),
      toolFailure('SERVICE_UNAVAILABLE', 'the card could not be read'),
    );
    requests.note(
      'ask_travel',
      answer('r1'),
      toolFailure('INVALID_REQUEST', 'refused', { continue_task_id: 'r1' }),
    );
    requests.note('ask_bank', answer('r1'), toolSuccess('a bank answer'));

    expect(requests.waitingFor('ask_travel', 'r1')).toBeDefined();
  });
});
