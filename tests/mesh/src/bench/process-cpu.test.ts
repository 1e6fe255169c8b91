import { describe, expect, it } from 'vitest';
import { cpuMsBetween, parseSchedstatNs, parseStatCpuTicks, sampleProcessCpu } from './process-cpu.js';

// A real /proc/<pid>/stat line of a node process whose command name holds a space and a parenthesis.
const STAT =
  '4242 (node (tsx) x) S 4200 4242 4200 0 -1 4194304 21000 0 12 0 735 118 0 0 20 0 11 0 123456 1200000000 30000 18446744073709551615 1 1 0 0 0 0 0 4096 134234626 0 0 0 17 1 0 0 0 0 0';

describe('reading a process CPU time from /proc', () => {
  it('utime + stime are read after the command name, even one with spaces and parentheses', () => {
    expect(parseStatCpuTicks(STAT)).toBe(735 + 118);
  });

  it('a line that is not a stat line is refused instead of read as zero', () => {
    expect(() => parseStatCpuTicks('garbage')).toThrow(/not a \/proc/);
  });

  it('schedstat gives nanoseconds on CPU as its first field', () => {
    expect(parseSchedstatNs('603608503 1200 37\n')).toBe(603608503);
  });

  it('over a window with every thread alive, the nanosecond figure is used, not the coarse ticks', () => {
    const ms = cpuMsBetween(
      { threadsNs: 1_000_000_000, ticks: 100 },
      { threadsNs: 1_004_300_000, ticks: 100 },
      100,
    );
    expect(ms).toBeCloseTo(4.3, 6);
  });

  it('when a thread exited during the window, the tick figure (which keeps its time) wins', () => {
    // 30 ms by ticks, but the schedstat sum dropped an exited thread's 25 ms.
    const ms = cpuMsBetween(
      { threadsNs: 100_000_000, ticks: 10 },
      { threadsNs: 105_000_000, ticks: 13 },
      100,
    );
    expect(ms).toBe(30);
  });

  it('without schedstat, ticks are converted with the given clock rate', () => {
    expect(cpuMsBetween({ threadsNs: undefined, ticks: 10 }, { threadsNs: undefined, ticks: 35 }, 250)).toBe(
      100,
    );
  });

  it.runIf(process.platform === 'linux')(
    'this process, after burning 60 ms of CPU, shows that much in /proc',
    () => {
      const before = sampleProcessCpu(process.pid);
      const usageBefore = process.cpuUsage();
      const spentMs = (): number => {
        const usage = process.cpuUsage(usageBefore);
        return (usage.user + usage.system) / 1000;
      };
      // Burn CPU time (not wall time): preemption on a busy machine cannot shorten it.
      while (spentMs() < 60) Math.sqrt(Math.random());
      const after = sampleProcessCpu(process.pid);
      const ms = cpuMsBetween(before, after, 100);
      expect(ms).toBeGreaterThanOrEqual(50);
      // Same process, same window: /proc and getrusage agree to within a tick or two.
      expect(Math.abs(ms - spentMs())).toBeLessThan(25);
    },
  );
});
