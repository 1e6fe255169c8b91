import { describe, expect, it } from 'vitest';
import {
  AckKind,
  ackKindOf,
  idleThresholdMsPerS,
  parseJszConsumers,
  parseRssBytes,
  secondsBackToIdle,
  type CpuRateSample,
} from './mesh-probes.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('mesh probes', () => {
  it('the resident memory is read from the VmRSS line, in bytes', () => {
    const status = 'Name:\tnode\nVmPeak:\t  900000 kB\nVmRSS:\t   123456 kB\nRssAnon:\t  100000 kB\n';
    expect(parseRssBytes(status)).toBe(123_456 * 1024);
    expect(() => parseRssBytes('Name:\tnode\n')).toThrow(/VmRSS/);
  });

  it('the consumer count comes from /jsz; a missing one is an error, not a zero', () => {
    expect(parseJszConsumers({ streams: 9, consumers: 14, messages: 3 })).toBe(14);
    expect(() => parseJszConsumers({ streams: 9 })).toThrow(/consumers/);
    expect(() => parseJszConsumers(null)).toThrow(/consumers/);
  });

  it('an in-progress ack (+WPI) is told apart from the other acks', () => {
    expect(ackKindOf(bytes('+WPI'))).toBe(AckKind.progress);
    expect(ackKindOf(bytes('+ACK'))).toBe(AckKind.other);
    expect(ackKindOf(bytes(''))).toBe(AckKind.other);
    expect(ackKindOf(bytes('-NAK {"delay":1}'))).toBe(AckKind.other);
  });

  it('when the mesh stays quiet for two seconds after a busy spell, it is back to idle from that spell’s end', () => {
    // 500 ms samples; the load ends at t=1000; busy until t=3000, quiet from then on.
    const samples: CpuRateSample[] = [];
    for (let at = 500; at <= 8_000; at += 500) {
      samples.push({ at, cpuMs: at <= 3_000 ? 200 : 2, intervalMs: 500 });
    }
    expect(secondsBackToIdle(samples, 1_000, 10)).toBe(2);
  });

  it('a quiet sample followed by a busy one does not count as back to idle', () => {
    const rates = [2, 200, 2, 2, 2, 2, 2];
    const samples = rates.map((cpuMs, i) => ({ at: 1_500 + i * 500, cpuMs, intervalMs: 500 }));
    // The first quiet run (1000–1500) is broken at 2000; the one from 2000 holds 2 s by 4000.
    expect(secondsBackToIdle(samples, 1_000, 10)).toBe(1);
  });

  it('when the mesh at rest shows as one 10 ms tick now and then, it is idle from the load’s end', () => {
    // 250 ms samples; /proc counts in 10 ms ticks: a tick every second is 10 ms/s, though each sample
    // holding one reads 40 ms/s.
    const samples = Array.from({ length: 40 }, (_, i) => ({
      at: 1_250 + i * 250,
      cpuMs: i % 4 === 0 ? 10 : 0,
      intervalMs: 250,
    }));
    expect(secondsBackToIdle(samples, 1_000, idleThresholdMsPerS(10))).toBe(0);
  });

  it('a mesh that never gets quiet again has no time back to idle', () => {
    const samples = Array.from({ length: 20 }, (_, i) => ({
      at: 1_500 + i * 500,
      cpuMs: 50,
      intervalMs: 500,
    }));
    expect(secondsBackToIdle(samples, 1_000, 10)).toBeUndefined();
  });

  it('idle leaves room for noise: half again, and at least 2 ms/s more', () => {
    expect(idleThresholdMsPerS(10)).toBe(15);
    expect(idleThresholdMsPerS(1)).toBe(3);
  });
});
