import { describe, expect, it } from 'vitest';
import { waitFor, WaitForTimeoutError } from './wait-for.js';

describe('waitFor', () => {
  it('when the condition becomes true, resolves with the predicate value', async () => {
    let calls = 0;
    const value = await waitFor(() => (++calls >= 3 ? { calls } : undefined), { intervalMs: 1 });
    expect(value).toEqual({ calls: 3 });
  });

  it('when the condition never holds, fails at the bound naming what was awaited and the last error', async () => {
    const error = await waitFor(
      () => {
        throw new Error('still booting');
      },
      { timeoutMs: 60, intervalMs: 5, description: 'the server' },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitForTimeoutError);
    expect((error as Error).message).toBe(
      'timed out after 60 ms waiting for the server; last error: still booting',
    );
    expect((error as Error).cause).toBeInstanceOf(Error);
  });

  it('when one attempt never settles, still fails at the bound', async () => {
    // The attempt never settles, so the rejection itself shows waitFor stopped waiting for it.
    const error = await waitFor(() => new Promise<boolean>(() => undefined), { timeoutMs: 50 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WaitForTimeoutError);
    expect((error as Error).message).toBe('timed out after 50 ms waiting for a condition');
  });
});
