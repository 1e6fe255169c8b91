import { describe, expect, it } from 'vitest';
import { NativeProviderDirectory } from './native-provider-directory.js';

const TTL_MS = 30_000;

function directoryAt(clock: { now: number }): NativeProviderDirectory {
  return new NativeProviderDirectory(TTL_MS, () => clock.now);
}

const put = (key: string, atMs: number) => ({ key, operation: 'PUT' as const, created: new Date(atMs) });

describe('NativeProviderDirectory', () => {
  it('a class announced by a running executor is provided; one nobody announced is not', () => {
    const clock = { now: 1_000_000 };
    const directory = directoryAt(clock);
    directory.heard(put('ExecuteScriptTool.exec-a_0a1b2c3d', clock.now));

    expect(directory.unprovided(['ExecuteScriptTool', 'DeepSearchTool'])).toEqual(['DeepSearchTool']);
  });

  it('when the executor deletes its announcement on stop, its class is no longer provided', () => {
    const clock = { now: 1_000_000 };
    const directory = directoryAt(clock);
    directory.heard(put('ExecuteScriptTool.exec-a_0a1b2c3d', clock.now));
    directory.heard({ key: 'ExecuteScriptTool.exec-a_0a1b2c3d', operation: 'DEL', created: new Date() });

    expect(directory.isProvided('ExecuteScriptTool')).toBe(false);
  });

  it('an announcement not renewed within the TTL (a crashed executor) stops counting, while another instance renewing keeps the class provided', () => {
    const clock = { now: 1_000_000 };
    const directory = directoryAt(clock);
    directory.heard(put('ExecuteScriptTool.exec-a_0a1b2c3d', clock.now));
    clock.now += TTL_MS;
    expect(directory.isProvided('ExecuteScriptTool')).toBe(false);

    directory.heard(put('ExecuteScriptTool.exec-b_4e5f6a7b', clock.now - 1_000));
    expect(directory.isProvided('ExecuteScriptTool')).toBe(true);
  });
});
