import { describe, expect, it } from 'vitest';
import { DEFAULT_CHAT_USER_ID, parseChatCompletionRequest } from './chat-completion-request.js';
import { OpenAiRefusal } from './openai-errors.js';

const user = { role: 'user', content: 'hi' };

function refusal(body: unknown): {
  status: number;
  param: string | null;
  code: string | null;
  message: string;
} {
  const parsed = parseChatCompletionRequest(body);
  if (!(parsed instanceof OpenAiRefusal)) throw new Error('expected a refusal');
  const { error } = parsed.toBody();
  return { status: parsed.httpStatus, param: error.param, code: error.code, message: error.message };
}

describe('a chat completion request as a task', () => {
  it('without `user`, the task runs for the default user; developer messages and empty tool_calls pass as sent', () => {
    const messages = [
      { role: 'developer', content: 'be terse' },
      user,
      { role: 'assistant', content: 'hello', tool_calls: [] },
    ];
    const parsed = parseChatCompletionRequest({ model: 'agent.v1', messages, stream: true, max_tokens: 5 });

    expect(parsed).toEqual({
      workflowId: 'agent.v1',
      stream: true,
      includeUsage: false,
      submission: { workflow_id: 'agent.v1', user_id: DEFAULT_CHAT_USER_ID, messages },
    });
  });

  it('an empty `user` is a 400 naming `user`, not the task field it maps to', () => {
    expect(refusal({ model: 'a', messages: [user], user: '' })).toMatchObject({ status: 400, param: 'user' });
  });

  it('a malformed message is a 400 naming the path inside it', () => {
    expect(refusal({ model: 'a', messages: [user, { role: 'user', content: 42 }] })).toMatchObject({
      status: 400,
      param: 'messages[1].content',
    });
  });

  it('an unknown role is a 400 naming the role', () => {
    expect(refusal({ model: 'a', messages: [{ role: 'critic', content: 'x' }] })).toMatchObject({
      status: 400,
      param: 'messages[0].role',
    });
  });

  it('a model that cannot be a workflow id is model_not_found, not a validation error', () => {
    expect(refusal({ model: 'no spaces/allowed', messages: [user] })).toMatchObject({
      status: 404,
      param: 'model',
      code: 'model_not_found',
    });
  });

  it('variables that are not an object are a 400 naming `variables`', () => {
    expect(refusal({ model: 'a', messages: [user], variables: [1] })).toMatchObject({
      status: 400,
      param: 'variables',
    });
  });
});
