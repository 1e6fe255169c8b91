/**
 * The services' NATS transport: nats.js's Node transport, with what the client writes during one turn of
 * the event loop gathered into one socket write.
 *
 * nats.js already joins the commands queued within one microtask, but a service's publishes, acks and
 * requests mostly come from different callbacks of the same turn (one per task in flight), and each
 * became its own write(2): the largest single cost of a busy service and a packet for nats-server to
 * read. Corking the socket at the first write of a turn and uncorking it once the turn's callbacks have
 * run (setImmediate) sends them as one writev(2). The cost is the rest of the current turn, well under
 * a millisecond, and nothing is reordered.
 */
import { NodeTransport, nodeResolveHost } from '@nats-io/transport-node/lib/node_transport.js';
import { NatsConnectionImpl, setTransportFactory } from '@nats-io/transport-node/lib/nats-base-client.js';
import type { NatsConnection, NodeConnectionOptions } from '@nats-io/transport-node';
import { reuseRequestCancelledError } from './nats-request-cancel.js';

export class TurnBatchingTransport extends NodeTransport {
  #corked = false;

  override send(frame: Uint8Array): void {
    const socket = this.socket as NodeTransport['socket'] | undefined;
    if (!this.#corked && socket !== undefined && !this.isClosed) {
      socket.cork();
      this.#corked = true;
      setImmediate(() => {
        this.#corked = false;
        socket.uncork();
      });
    }
    super.send(frame);
  }
}

/**
 * `connect` of @nats-io/transport-node, on {@link TurnBatchingTransport}, with answered requests building
 * no error (nats-request-cancel.ts).
 */
export function connectWithTurnBatching(options: NodeConnectionOptions): Promise<NatsConnection> {
  // The factory is process-wide and read at every (re)connect; the node client's own `connect` sets
  // its plain transport again, which only costs batching, never correctness.
  setTransportFactory({ factory: () => new TurnBatchingTransport(), dnsResolveFn: nodeResolveHost });
  reuseRequestCancelledError();
  return NatsConnectionImpl.connect(options);
}
