/**
 * A service whose start-up needs JetStream, as the mesh's services do: it makes sure a stream exists,
 * then answers `test.stream-info` with the stream's name until it is stopped. With
 * HOLD_FIRST_ATTEMPT=true its first start-up attempt waits for SIGUSR2 before it talks to JetStream,
 * so a test can freeze NATS exactly there.
 */
import { once } from 'node:events';
import { jetstreamManager } from '@nats-io/jetstream';
import { runService } from '../service.js';

let attempts = 0;

await runService({
  name: 'jetstream-user',
  async start({ nc, log }) {
    attempts += 1;
    if (attempts === 1 && process.env.HOLD_FIRST_ATTEMPT === 'true') {
      const resumed = once(process, 'SIGUSR2');
      log.info('first start-up attempt holds until SIGUSR2');
      await resumed;
    }
    const jsm = await jetstreamManager(nc, { timeout: 2_000 });
    const stream = await jsm.streams.add({ name: 'STARTUP_FIXTURE', subjects: ['startup-fixture.>'] });
    const sub = nc.subscribe('test.stream-info', {
      callback: (_error, msg) => {
        msg.respond(stream.config.name);
      },
    });
    return { stop: () => sub.drain() };
  },
});
