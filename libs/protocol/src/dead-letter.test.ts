import { describe, expect, it } from 'vitest';
import { DeadLetter, deadLetterView, DeadLetterView } from './dead-letter.js';
import { deadLetterSubject, deadLettersWildcard, Streams, taskMaxDeliveriesAdvisories } from './names.js';

const TRACE = '0123456789abcdef0123456789abcdef';

const letter = {
  trace_id: TRACE,
  account_id: 'acme',
  workflow_id: 'weather',
  user_id: 'u1',
  reason: { code: 'MAX_DELIVER_EXCEEDED', message: 'delivered 4 times' },
  attempts: 4,
  dead_at: '2026-01-01T00:00:00.000Z',
  source: 'executor',
  input: {
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'x'.repeat(300) }] },
    ],
    variables: { city: 'Oslo' },
  },
} as const;

describe('dead letters', () => {
  it('a dead letter carrying a runtime_config (a vault) does not validate', () => {
    const withVault = { ...letter, runtime_config: { vault: { kid: 'k', ciphertext: 'x' } } };
    expect(DeadLetter.safeParse(withVault).success).toBe(false);
    expect(DeadLetter.safeParse(letter).success).toBe(true);
  });

  it('the admin view summarises the input: message count, last user text cut to 200, variable names', () => {
    const view = deadLetterView(DeadLetter.parse(letter));
    expect(DeadLetterView.parse(view).input_summary).toEqual({
      message_count: 2,
      last_user_message: 'x'.repeat(200),
      variable_names: ['city'],
    });
    expect(view).not.toHaveProperty('input');
  });

  it('a dead letter subject is one per task, inside the stream, and the wildcards confine an account', () => {
    expect(deadLetterSubject('acme', TRACE)).toBe(`mesh.dead.acme.${TRACE}`);
    expect(deadLettersWildcard('acme')).toBe('mesh.dead.acme.*');
    expect(deadLettersWildcard()).toBe('mesh.dead.*.*');
    expect(Streams.DEAD_LETTERS.subjects).toEqual(['mesh.dead.>']);
    expect(taskMaxDeliveriesAdvisories()).toBe('$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MESH_TASKS.*');
    // The advisories the executors handle are the ones MESH_TASK_ADVISORIES stores.
    expect(Streams.TASK_ADVISORIES.subjects).toEqual([taskMaxDeliveriesAdvisories()]);
    expect(() => deadLetterSubject('a.b', TRACE)).toThrow();
  });
});
