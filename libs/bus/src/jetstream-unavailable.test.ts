import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { readWhileJetStreamRecovers } from './jetstream-unavailable.js';

const unavailable = () =>
  new JetStreamApiError({
    code: 503,
    err_code: 10008,
    description: 'JetStream system temporarily unavailable',
  });

describe('a JetStream read while the cluster recovers', () => {
  it('when JetStream answers "temporarily unavailable" twice, the read is tried again and its answer returned', async () => {
    let reads = 0;
    const answer = await readWhileJetStreamRecovers(async () => {
      reads += 1;
      if (reads <= 2) throw unavailable();
      return 'the last event';
    });
    expect([answer, reads]).toEqual(['the last event', 3]);
  });

  it('another refusal is thrown at once, and "unavailable" past the window is thrown as it came', async () => {
    let reads = 0;
    const refused = new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' });
    await expect(
      readWhileJetStreamRecovers(async () => {
        reads += 1;
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(reads).toBe(1);
    await expect(
      readWhileJetStreamRecovers(async () => {
        throw unavailable();
      }, 0),
    ).rejects.toMatchObject({ message: 'JetStream system temporarily unavailable' });
  });
});
