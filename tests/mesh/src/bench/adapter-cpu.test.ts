import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ADAPTER_SCRIPT, parseAdapterCpu, renderAdapterCpu } from './adapter-cpu.js';

const OUTPUT = `2000 text deltas a call, 20 calls each (after 3 warm-up calls)
openai-chat (fast)      3.21 µs CPU/delta      6.4 ms CPU/call  (140 ms wall, 40000 deltas)
anthropic-messages     12.50 µs CPU/delta     25.0 ms CPU/call  (600 ms wall, 40000 deltas)
bedrock-converse        8.00 µs CPU/delta     16.0 ms CPU/call  (400 ms wall, 40000 deltas)
`;

describe('the model adapters’ CPU per delta', () => {
  it('each adapter line of the script’s output becomes a row; other lines are skipped', () => {
    expect(parseAdapterCpu(OUTPUT)).toEqual([
      { adapter: 'openai-chat (fast)', us_per_delta: 3.21, ms_per_call: 6.4 },
      { adapter: 'anthropic-messages', us_per_delta: 12.5, ms_per_call: 25 },
      { adapter: 'bedrock-converse', us_per_delta: 8, ms_per_call: 16 },
    ]);
  });

  it('the table shows one row per adapter', () => {
    const markdown = renderAdapterCpu({
      deltas: 2000,
      calls: 20,
      rows: parseAdapterCpu(OUTPUT),
      output: OUTPUT,
    });
    expect(markdown).toContain('| anthropic-messages | 12.5 | 25 |');
  });

  it('the script the bench runs is where the executor keeps it', () => {
    expect(existsSync(ADAPTER_SCRIPT)).toBe(true);
  });
});
