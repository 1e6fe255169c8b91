/** A minimal service for the life-cycle tests: answers requests on `test.echo` until it is stopped. */
import { runService } from '../service.js';

await runService({
  name: 'echo',
  async start({ nc, log }) {
    const sub = nc.subscribe('test.echo', {
      callback: (_error, msg) => {
        log.info({ bytes: msg.data.length }, 'echo');
        msg.respond(msg.data);
      },
    });
    return {
      async stop() {
        log.info('echo stopping');
        await sub.drain();
      },
    };
  },
});
