import { describe, expect, it } from 'vitest';
import { diffJson, parseAgentVersion, SubmitTaskRequest, WorkflowRef } from './index.js';

describe('WorkflowRef', () => {
  it('when a submission names a bare workflow id, it pins nothing', () => {
    expect(WorkflowRef.parse('agent_chat.v2')).toEqual({ workflow_id: 'agent_chat.v2' });
  });

  it('when it names workflow_id@3, it pins version 3', () => {
    expect(WorkflowRef.parse('agent_chat@3')).toEqual({ workflow_id: 'agent_chat', version: 3 });
  });

  it.each(['agent@', 'agent@0', 'agent@01', 'agent@x', 'agent@-1', 'agent@1.5', '@3', 'a@1@2'])(
    'when the pin is malformed (%s), it is refused',
    (text) => {
      expect(WorkflowRef.safeParse(text).success).toBe(false);
      expect(
        SubmitTaskRequest.safeParse({
          workflow_id: text,
          user_id: 'u',
          messages: [{ role: 'user', content: 'x' }],
        }).success,
      ).toBe(false);
    },
  );

  it('when a version is text, only plain decimals from 1 are versions', () => {
    expect(parseAgentVersion('12')).toBe(12);
    expect(parseAgentVersion('0')).toBeUndefined();
    expect(parseAgentVersion('1e3')).toBeUndefined();
  });
});

describe('diffJson', () => {
  it('when members are added, removed and changed, each is one entry at its JSON pointer', () => {
    const changes = diffJson(
      { system_prompt: 'a', model: { model_name: 'm1', base_url: 'u' }, tools: ['x'], max_steps: 3 },
      { system_prompt: 'b', model: { model_name: 'm1', base_url: 'u', temperature: 1 }, tools: ['x', 'y'] },
    );
    expect(changes).toEqual([
      { path: '/max_steps', op: 'removed', from: 3 },
      { path: '/model/temperature', op: 'added', to: 1 },
      { path: '/system_prompt', op: 'changed', from: 'a', to: 'b' },
      { path: '/tools', op: 'changed', from: ['x'], to: ['x', 'y'] },
    ]);
  });

  it('when two definitions are equal, there is no change', () => {
    expect(diffJson({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
  });
});
