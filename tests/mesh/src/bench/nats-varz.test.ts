import { describe, expect, it } from 'vitest';
import { parseVarz, trafficPerTask } from './nats-varz.js';

describe('NATS traffic per task from /varz', () => {
  it('the counters are picked out of a varz answer with many other fields', () => {
    const varz = {
      server_id: 'N1',
      connections: 4,
      in_msgs: 10,
      out_msgs: 20,
      in_bytes: 300,
      out_bytes: 400,
    };
    expect(parseVarz(varz)).toEqual({ in_msgs: 10, out_msgs: 20, in_bytes: 300, out_bytes: 400 });
  });

  it('a varz answer without a counter is refused rather than counted as zero', () => {
    expect(() => parseVarz({ in_msgs: 1, out_msgs: 2, in_bytes: 3 })).toThrow(/out_bytes/);
  });

  it('the difference of two readings is divided by the tasks run between them', () => {
    const before = { in_msgs: 100, out_msgs: 200, in_bytes: 1_000, out_bytes: 2_000 };
    const after = { in_msgs: 410, out_msgs: 610, in_bytes: 11_000, out_bytes: 42_000 };
    expect(trafficPerTask(before, after, 10)).toEqual({
      in_msgs: 31,
      out_msgs: 41,
      in_bytes: 1_000,
      out_bytes: 4_000,
    });
  });

  it('counters that went down (a restarted server) are an error, not negative traffic', () => {
    const before = { in_msgs: 100, out_msgs: 200, in_bytes: 1_000, out_bytes: 2_000 };
    expect(() => trafficPerTask(before, { ...before, in_msgs: 5 }, 1)).toThrow(/went down/);
  });
});
