import { RequestError, RequestOne } from '@nats-io/transport-node/lib/nats-base-client.js';
import { describe, expect, it } from 'vitest';
import { reuseRequestCancelledError } from './nats-request-cancel.js';

/** A request as nats.js makes one, on a stand-in of its mux (only `cancel` is called by the request). */
const request = () =>
  new RequestOne({ cancel: () => undefined } as never, 'svc.echo', { timeout: 60_000 }, false);

const rejection = async (r: RequestOne): Promise<unknown> => {
  r.cancel();
  try {
    await r.deferred;
  } catch (error) {
    return error;
  } finally {
    r.timer.cancel();
  }
  throw new Error('the cancelled request was not rejected');
};

describe('requests cancelled without a reason', () => {
  it('when two requests are cancelled without a reason, both are rejected with one RequestError("cancelled") made once, and a given reason is kept', async () => {
    reuseRequestCancelledError();
    reuseRequestCancelledError();
    const first = await rejection(request());
    const second = await rejection(request());
    expect(first).toBeInstanceOf(RequestError);
    expect((first as Error).message).toContain('cancelled');
    expect(second).toBe(first);

    const withReason = request();
    const reason = new Error('connection closed');
    withReason.cancel(reason);
    await expect(withReason.deferred).rejects.toBe(reason);
    withReason.timer.cancel();
  });
});
