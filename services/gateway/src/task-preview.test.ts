/**
 * The preview a task's status record keeps of its message: the last user message's start, masked of
 * credential-shaped tokens, and cut.
 */
import { TASK_PREVIEW_LENGTH } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { maskCredentials, taskPreview } from './task-preview.js';

describe('task preview', () => {
  it('when a conversation is sent, the preview is the last user message, whitespace collapsed', () => {
    expect(
      taskPreview([
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'an answer' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'When was\n\n  ByteDance' },
            { type: 'text', text: 'founded?' },
          ],
        },
      ]),
    ).toBe('When was ByteDance founded?');
    expect(taskPreview([{ role: 'system', content: 'no user' }])).toBeUndefined();
    expect(taskPreview(undefined)).toBeUndefined();
  });

  it('when the message is long, the preview is cut to its length with an ellipsis', () => {
    const preview = taskPreview([{ role: 'user', content: 'word '.repeat(1_000) }]) ?? '';
    expect(preview.length).toBe(TASK_PREVIEW_LENGTH);
    expect(preview.endsWith('…')).toBe(true);
  });

  it('when the message carries credential-shaped tokens, none of them reaches the preview', () => {
    const secrets = [
      'sk-proj-abcdefghijklmnop1234',
      'ghp_abcdefghijklmnopqrstuvwxyz0123',
      'xoxb-1234567890-abcdefgh',
      'AKIAIOSFODNN7EXAMPLE',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl',
      '3f786850e387550fdab836ed7e6dc881de23001b',
      'hunter2hunter2',
    ];
    const message = `use key ${secrets[0]} and ${secrets[1]}, ${secrets[2]}; aws ${secrets[3]} jwt ${secrets[4]} sha ${secrets[5]} password=${secrets[6]}`;
    const masked = maskCredentials(message);
    for (const secret of secrets) expect(masked).not.toContain(secret);
    expect(masked).toContain('password=[redacted]');
    expect(maskCredentials('Authorization: Bearer abc.def-ghi')).toBe('Authorization: Bearer [redacted]');
    // Plain words stay.
    expect(maskCredentials('When was ByteDance founded in 2012?')).toBe(
      'When was ByteDance founded in 2012?',
    );
    const preview = taskPreview([{ role: 'user', content: message }]) ?? '';
    for (const secret of secrets) expect(preview).not.toContain(secret.slice(0, 12));
  });

  it('when a credential straddles the end of the part that is read, no piece of it is kept', () => {
    const secret = 'a1'.repeat(40);
    const filler = 'x '.repeat(2 * TASK_PREVIEW_LENGTH - 5);
    const preview = taskPreview([{ role: 'user', content: `${filler}${secret}` }]) ?? '';
    expect(preview).not.toContain('a1a1');
  });
});
