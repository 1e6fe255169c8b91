import { JetStreamApiError } from '@nats-io/jetstream';
import { NoRespondersError, PermissionViolationError, TimeoutError } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { isTransientNatsError, retryStartup, StartupTimeoutError } from './startup-retry.js';

/** nats.js throws a `JetStreamNotEnabled` but does not export its class; same name, same chain. */
function jetStreamNotEnabled(cause?: unknown): Error {
  return Object.assign(new Error('jetstream is not enabled', { cause }), { name: 'JetStreamNotEnabled' });
}

/** An attempt that fails with each of `failures` in turn, then resolves with 'started'. */
function failingThen(failures: unknown[]): { attempt: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    attempt: async () => {
      const failure = failures[calls];
      calls += 1;
      if (failure !== undefined) throw failure;
      return 'started';
    },
    calls: () => calls,
  };
}

describe('isTransientNatsError', () => {
  it('a request timeout, no responders, JetStream not available and a cluster without leader are transient', () => {
    expect(isTransientNatsError(new TimeoutError())).toBe(true);
    expect(isTransientNatsError(new NoRespondersError('$JS.API.INFO'))).toBe(true);
    expect(isTransientNatsError(jetStreamNotEnabled(new NoRespondersError('$JS.API.INFO')))).toBe(true);
    expect(
      isTransientNatsError(
        new JetStreamApiError({
          code: 503,
          err_code: 10008,
          description: 'JetStream system temporarily unavailable',
        }),
      ),
    ).toBe(true);
  });

  it('a timeout wrapped as the cause of another error is transient', () => {
    expect(isTransientNatsError(new Error('opening bucket failed', { cause: new TimeoutError() }))).toBe(
      true,
    );
  });

  it('a permission violation, other JetStream API errors and plain errors are not transient', () => {
    const refused = new PermissionViolationError(
      'Permissions Violation for Publish to "$JS.API.STREAM.CREATE.X"',
      'publish',
      '$JS.API.STREAM.CREATE.X',
    );
    expect(isTransientNatsError(refused)).toBe(false);
    expect(isTransientNatsError(new Error('refused', { cause: refused }))).toBe(false);
    expect(
      isTransientNatsError(
        new JetStreamApiError({ code: 400, err_code: 10058, description: 'stream name already in use' }),
      ),
    ).toBe(false);
    expect(isTransientNatsError(new Error('EADDRINUSE'))).toBe(false);
    const noJetStreamForAccount = new JetStreamApiError({
      code: 503,
      err_code: 10039,
      description: 'jetstream not enabled for account',
    });
    expect(isTransientNatsError(jetStreamNotEnabled(noJetStreamForAccount))).toBe(false);
    expect(isTransientNatsError(undefined)).toBe(false);
  });
});

describe('retryStartup', () => {
  it('when the first attempts time out, start-up is tried again, each wait reported, until it succeeds', async () => {
    const attempt = failingThen([new TimeoutError(), new NoRespondersError('$JS.API.INFO')]);
    const waits: number[] = [];
    const result = await retryStartup(attempt.attempt, {
      timeoutMs: 60_000,
      initialDelayMs: 0,
      onWait: (wait) => waits.push(wait.attempt),
    });
    expect(result).toBe('started');
    expect(attempt.calls()).toBe(3);
    expect(waits).toEqual([1, 2]);
  });

  it('when a failure is not transient, it is thrown at once without another attempt', async () => {
    const refused = new PermissionViolationError(
      'Permissions Violation for Subscription to "x"',
      'subscription',
      'x',
    );
    const attempt = failingThen([refused]);
    await expect(retryStartup(attempt.attempt, { timeoutMs: 60_000, initialDelayMs: 0 })).rejects.toBe(
      refused,
    );
    expect(attempt.calls()).toBe(1);
  });

  it('when the next wait would pass the bound, start-up ends with a StartupTimeoutError naming STARTUP_TIMEOUT_MS', async () => {
    const timeout = new TimeoutError();
    const attempt = failingThen([timeout, timeout]);
    const failure = await retryStartup(attempt.attempt, { timeoutMs: 0, initialDelayMs: 1 }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(StartupTimeoutError);
    expect((failure as StartupTimeoutError).message).toMatch(/STARTUP_TIMEOUT_MS/);
    expect((failure as StartupTimeoutError).cause).toBe(timeout);
    expect(attempt.calls()).toBe(1);
  });

  it('when the signal aborts during a wait, start-up stops waiting', async () => {
    const abort = new AbortController();
    const attempt = failingThen([new TimeoutError(), new TimeoutError()]);
    // The bound sits far beyond the first wait, so a slow clock tick cannot turn the wait into a
    // StartupTimeoutError before the abort is seen.
    const failure = retryStartup(attempt.attempt, {
      timeoutMs: 3_600_000,
      initialDelayMs: 600_000,
      signal: abort.signal,
      onWait: () => abort.abort(),
    });
    await expect(failure).rejects.toMatchObject({ name: 'AbortError' });
    expect(attempt.calls()).toBe(1);
  });
});
