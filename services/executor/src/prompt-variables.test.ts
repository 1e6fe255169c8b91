import type { ChatMessage } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { renderText, renderVariables } from './prompt-variables.js';

const variables = {
  current_time: '2026-11-23T10:00:00Z',
  file_url: 'https://files.example/report.pdf',
  page: 2,
  customer: { name: 'Ada', tier: 'gold', tags: ['vip', 'eu'] },
};

describe('variables in the conversation', () => {
  it('when the system prompt and the user message name variables, the model sees their values', () => {
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content: 'Today is {{current_time}}. Customer: {{ customer.name }} ({{customer.tier}}).',
      },
      { role: 'user', content: [{ type: 'text', text: 'Summarise {{file_url}}, page {{page}}.' }] },
    ];
    expect(renderVariables(messages, variables)).toEqual([
      { role: 'system', content: 'Today is 2026-11-23T10:00:00Z. Customer: Ada (gold).' },
      {
        role: 'user',
        content: [{ type: 'text', text: 'Summarise https://files.example/report.pdf, page 2.' }],
      },
    ]);
  });

  it('a variable that is not a string goes in as JSON, and an array element by its index', () => {
    expect(renderText('{{customer.tags}} / {{customer.tags.1}} / {{customer}}', variables)).toBe(
      '["vip","eu"] / eu / {"name":"Ada","tier":"gold","tags":["vip","eu"]}',
    );
  });

  it('when a placeholder names no variable, it stays as written', () => {
    expect(renderText('{{missing}} {{customer.age}} {{page.x}} {{ not a name }}', variables)).toBe(
      '{{missing}} {{customer.age}} {{page.x}} {{ not a name }}',
    );
  });

  it("assistant and tool messages are history and stay as they are; a variable's value is not templated again", () => {
    const messages: ChatMessage[] = [
      { role: 'assistant', content: 'I used {{page}} before' },
      { role: 'tool', tool_call_id: 'c1', content: 'tool said {{page}}' },
      { role: 'user', content: '{{inner}}' },
    ];
    expect(renderVariables(messages, { page: 2, inner: '{{page}}' })).toEqual([
      { role: 'assistant', content: 'I used {{page}} before' },
      { role: 'tool', tool_call_id: 'c1', content: 'tool said {{page}}' },
      { role: 'user', content: '{{page}}' },
    ]);
  });

  it('inherited properties are not variables', () => {
    expect(renderText('{{constructor}} {{customer.toString}}', variables)).toBe(
      '{{constructor}} {{customer.toString}}',
    );
  });
});
