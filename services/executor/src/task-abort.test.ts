import { describe, expect, it } from 'vitest';
import { abortError, TaskAbort } from './task-abort.js';

describe('task abort', () => {
  it('a deadline already past when the attempt starts aborts it at once with DEADLINE_EXCEEDED', () => {
    const abort = new TaskAbort(Date.now() - 1);
    expect(abort.signal.aborted).toBe(true);
    expect(abortError(abort.signal.reason)).toMatchObject({ code: 'DEADLINE_EXCEEDED', retryable: false });
  });

  it('the first reason wins: a cancel after the deadline fired leaves the task DEADLINE_EXCEEDED', async () => {
    const abort = new TaskAbort(Date.now() + 20);
    await new Promise<void>((resolve) =>
      abort.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    abort.cancel('too late');
    expect(abortError(abort.signal.reason).code).toBe('DEADLINE_EXCEEDED');
  });

  it('a cancel ends the task; handing back on shutdown does not', () => {
    const cancelled = new TaskAbort();
    cancelled.cancel('user asked');
    expect(cancelled.reason?.endsTask).toBe(true);
    expect(abortError(cancelled.reason)).toEqual({
      code: 'CANCELLED',
      message: 'the task was cancelled: user asked',
      retryable: false,
    });

    const handedBack = new TaskAbort(Date.now() + 60_000);
    handedBack.handBack();
    expect(handedBack.reason?.endsTask).toBe(false);
    handedBack.dispose();
  });
});
