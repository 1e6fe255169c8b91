import { describe, expect, it } from 'vitest';
import { ChatMessage } from './chat.js';

describe('chat messages', () => {
  it('accept the four roles of a tool-calling conversation, reasoning included', () => {
    const conversation = [
      { role: 'system', content: 'You are a company analyst.' },
      { role: 'user', content: '查一下字节跳动' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'I should look the company up.',
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'search_company_basic', arguments: '{"keyword":"字节跳动"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"total":1}' },
      { role: 'assistant', content: '字节跳动成立于2012年。' },
    ];
    for (const message of conversation) expect(ChatMessage.parse(message)).toEqual(message);
  });

  it('accept user content as an array of text and image parts', () => {
    const message = {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
      ],
    };
    expect(ChatMessage.safeParse(message).success).toBe(true);
  });

  it('keep fields they do not know, since upstreams and models send more', () => {
    const message = { role: 'assistant', content: 'hi', annotations: [], audio: null };
    expect(ChatMessage.parse(message)).toEqual(message);
  });

  it('reject an unknown role, a tool message without tool_call_id and non-string tool arguments', () => {
    expect(ChatMessage.safeParse({ role: 'robot', content: 'x' }).success).toBe(false);
    expect(ChatMessage.safeParse({ role: 'tool', content: 'x' }).success).toBe(false);
    const objectArguments = {
      role: 'assistant',
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { a: 1 } } }],
    };
    expect(ChatMessage.safeParse(objectArguments).success).toBe(false);
  });
});
