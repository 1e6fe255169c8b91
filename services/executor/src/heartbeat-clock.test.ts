import { describe, expect, it } from 'vitest';
import { HeartbeatClock } from './heartbeat-clock.js';

describe('HeartbeatClock', () => {
  it('when ticks come on time, no stall is counted', () => {
    let now = 0;
    const clock = new HeartbeatClock(2_500, () => now);
    for (let i = 0; i < 10; i++) {
      now += 500;
      clock.beat();
    }
    expect(clock.stalls()).toBe(0);
  });

  it('when the process stood still, the stall counts before the late tick comes and stays one stall after it', () => {
    let now = 0;
    const clock = new HeartbeatClock(2_500, () => now);
    now += 500;
    clock.beat();
    now += 6_000;
    expect(clock.stalls()).toBe(1);
    clock.beat();
    expect(clock.stalls()).toBe(1);
    now += 500;
    clock.beat();
    expect(clock.stalls()).toBe(1);
  });
});
