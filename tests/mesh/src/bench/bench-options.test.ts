import { describe, expect, it } from 'vitest';
import { benchOptions, scaledTasks } from './bench-options.js';

describe('bench options from the environment', () => {
  it('with nothing set: medians of 3 passes at full scale, a warm-up of 300 tasks, every workload, no profiles', () => {
    expect(benchOptions({})).toEqual({
      scale: 1,
      repeat: 3,
      cpuProfileDir: undefined,
      warmUpTasks: 300,
      only: undefined,
      pacedInFlight: [100, 500],
      pacedSlots: undefined,
    });
  });

  it('the paced counts in flight are listed, the paced slots are the default unless set or `max`', () => {
    expect(benchOptions({ BENCH_PACED_IN_FLIGHT: '20, 40' })).toMatchObject({
      pacedInFlight: [20, 40],
      pacedSlots: undefined,
    });
    expect(benchOptions({ BENCH_PACED_IN_FLIGHT: '20, 40', BENCH_PACED_SLOTS: 'max' }).pacedSlots).toBe(40);
    expect(benchOptions({ BENCH_PACED_SLOTS: 'default' }).pacedSlots).toBeUndefined();
    expect(benchOptions({ BENCH_PACED_SLOTS: '64' }).pacedSlots).toBe(64);
    expect(() => benchOptions({ BENCH_PACED_IN_FLIGHT: '100,x' })).toThrow(/BENCH_PACED_IN_FLIGHT/);
    expect(() => benchOptions({ BENCH_PACED_SLOTS: '0' })).toThrow(/BENCH_PACED_SLOTS/);
  });

  it('BENCH_ONLY picks workloads by name, and BENCH_WARMUP sets the warm-up; a bad warm-up is refused', () => {
    const options = benchOptions({ BENCH_ONLY: 'one-tool, ten-tools', BENCH_WARMUP: '20' });
    expect(options.only).toEqual(['one-tool', 'ten-tools']);
    expect(options.warmUpTasks).toBe(20);
    expect(benchOptions({ BENCH_ONLY: ' , ' }).only).toBeUndefined();
    expect(() => benchOptions({ BENCH_WARMUP: '-1' })).toThrow(/BENCH_WARMUP/);
  });

  it('a relative profile directory is taken from where npm run was typed', () => {
    const options = benchOptions({ BENCH_CPU_PROF: 'prof', INIT_CWD: '/repo', BENCH_REPEAT: '1' });
    expect(options).toMatchObject({ scale: 1, repeat: 1, cpuProfileDir: '/repo/prof' });
  });

  it('an absolute profile directory stays as it is', () => {
    expect(benchOptions({ BENCH_CPU_PROF: '/tmp/p', INIT_CWD: '/repo' }).cpuProfileDir).toBe('/tmp/p');
  });

  it('a scale that is not a positive number is refused, naming the variable', () => {
    expect(() => benchOptions({ BENCH_SCALE: 'fast' })).toThrow(/BENCH_SCALE/);
    expect(() => benchOptions({ BENCH_SCALE: '0' })).toThrow(/BENCH_SCALE/);
  });

  it('a fractional repeat is refused', () => {
    expect(() => benchOptions({ BENCH_REPEAT: '1.5' })).toThrow(/BENCH_REPEAT/);
  });

  it('a scaled task count never drops below the concurrency', () => {
    expect(scaledTasks(640, 0.05, 64)).toBe(64);
    expect(scaledTasks(100, 0.5, 1)).toBe(50);
    expect(scaledTasks(10, 0.01, 1)).toBe(1);
  });
});
