/**
 * A service whose start-up needs JetStream, as the mesh's services do: it makes sure a stream exists,
 * then answers `test.stream-info` with the stream's name until it is stopped.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { runService } from '../service.js';

await runService({
  name: 'jetstream-user',
  async start({ nc }) {
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
