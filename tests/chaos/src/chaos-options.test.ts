import { describe, expect, it } from 'vitest';
import { chaosOptions } from './chaos-options.js';

describe('chaosOptions', () => {
  it('the full profile asks for at least 500 tasks, 50 kills and 5 NATS faults', () => {
    expect(chaosOptions({})).toMatchObject({ profile: 'full', tasks: 500, kills: 50, natsFaults: 5 });
  });

  it('the ci profile is smaller, and a variable overrides the profile', () => {
    expect(chaosOptions({ CHAOS_PROFILE: 'ci' })).toMatchObject({ tasks: 120, kills: 12, natsFaults: 2 });
    expect(chaosOptions({ CHAOS_PROFILE: 'ci', CHAOS_TASKS: '40', CHAOS_SEED: '7' })).toMatchObject({
      tasks: 40,
      seed: 7,
    });
  });

  it('both profiles pause executors and nats-server past the executors’ 3 s ack_wait', () => {
    for (const profile of ['full', 'ci']) {
      const options = chaosOptions({ CHAOS_PROFILE: profile });
      expect(options.executorPauses).toBeGreaterThan(0);
      expect(options.executorPauseMs).toBeGreaterThan(3_000);
      expect(options.natsFaults).toBeGreaterThanOrEqual(2); // kill and pause alternate
      expect(options.natsPauseMs).toBeGreaterThan(3_000);
    }
  });

  it('an empty ack-wait variable leaves the executor its own default', () => {
    expect(chaosOptions({ CHAOS_EXECUTOR_ACK_WAIT_MS: '' }).executorAckWaitMs).toBe('');
  });

  it('a bad value stops the run with the variable’s name', () => {
    expect(() => chaosOptions({ CHAOS_KILLS: 'many' })).toThrow(/CHAOS_KILLS/);
    expect(() => chaosOptions({ CHAOS_PROFILE: 'huge' })).toThrow(/CHAOS_PROFILE/);
  });
});
