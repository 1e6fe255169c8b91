import { describe, expect, it } from 'vitest';
import {
  areaOf,
  renderProfileSummaries,
  summarizeCpuProfile,
  whereOf,
  type CpuProfile,
} from './profile-summary.js';

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, lineNumber: 9 },
  children,
});

/**
 * root → loop → runAgentLoop (executor) → publish (nats-core) → writev; root → (idle); root → module
 * loading → compile; root → (garbage collector). Sample times in µs.
 */
const profile: CpuProfile = {
  nodes: [
    frame(1, '(root)', '', [2, 6, 7, 9]),
    frame(2, 'processTicksAndRejections', 'node:internal/process/task_queues', [3]),
    frame(3, 'runAgentLoop', 'file:///repo/services/executor/src/agent-loop.ts', [4]),
    frame(4, 'publish', 'file:///repo/node_modules/@nats-io/nats-core/lib/nats.js', [5]),
    frame(5, 'writev', ''),
    frame(6, '(idle)', ''),
    frame(7, 'loadESM', 'node:internal/modules/esm/loader', [8]),
    frame(8, 'compileSourceTextModule', ''),
    frame(9, '(garbage collector)', ''),
  ],
  samples: [3, 4, 5, 5, 6, 6, 6, 8, 9],
  timeDeltas: [1000, 1000, 1000, 1000, 5000, 5000, 5000, 7000, 1000],
};

describe('where a profiled process spent its CPU', () => {
  it('when a profile holds idle, start-up and steady work, busy time counts only the work, and areas and functions are shares of it', () => {
    const summary = summarizeCpuProfile(profile, 10);
    expect(summary.busyMs).toBe(5);
    expect(summary.startupMs).toBe(7);
    expect(summary.functions).toEqual([
      { name: 'writev', where: '(native)', percent: 40 },
      { name: 'runAgentLoop', where: 'services/executor/src/agent-loop.ts:10', percent: 20 },
      { name: 'publish', where: '@nats-io/nats-core:10', percent: 20 },
      { name: '(garbage collector)', where: '(native)', percent: 20 },
    ]);
    expect(summary.areas).toEqual([
      { area: 'services/executor', percent: 80 },
      { area: '@nats-io/nats-core', percent: 60 },
      { area: 'node: socket writes', percent: 40 },
      { area: 'garbage collector', percent: 20 },
    ]);
    const markdown = renderProfileSummaries([{ process: 'executor/CPU.1.cpuprofile', summary }]);
    expect(markdown).toContain('### executor/CPU.1.cpuprofile: 5 ms busy (start-up module loading 7 ms');
    expect(markdown).toContain('| services/executor | 80 | `writev` | (native) | 40 |');
  });

  it('names where code lives: a built workspace file as its source, a dependency by package, Node internals as they are', () => {
    expect(whereOf('file:///w/main/libs/bus/dist/task-event-writer.js')).toBe(
      'libs/bus/src/task-event-writer.ts',
    );
    expect(whereOf('file:///w/main/node_modules/undici/lib/core.js')).toBe('undici');
    expect(whereOf('file:///w/main/node_modules/@opentelemetry/api/build/x.js')).toBe('@opentelemetry/api');
    expect(whereOf('node:internal/crypto/keys')).toBe('node:internal/crypto/keys');
    expect(areaOf('diffieHellman', 'node:internal/crypto/diffiehellman')).toBe('node: crypto');
    expect(areaOf('emit', 'node:events')).toBe('');
  });
});
