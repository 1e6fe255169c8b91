// A TCP link on loopback between one client and the NATS server, which a test can cut and restore: the
// client loses its connection (and cannot reconnect) while everyone else keeps theirs.
import { createServer, Socket, type Server } from 'node:net';

export interface CuttableLink {
  /** `nats://127.0.0.1:<port>`: where the client behind the link connects. */
  readonly url: string;
  /** Connections the link has accepted so far (a reconnect adds one). */
  readonly accepted: number;
  /** Drops every connection through the link and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startCuttableLink(target: { port: number }): Promise<CuttableLink> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    const forget = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', forget).on('error', forget);
    upstream.on('close', forget).on('error', forget);
    upstream.connect(target.port, '127.0.0.1');
    client.pipe(upstream).pipe(client);
  });
  await listen(server, 0);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the link has no port');
  const port = address.port;

  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    get accepted() {
      return accepted;
    },
    cut,
    restore: () => listen(server, port),
    close: async () => {
      if (server.listening) await cut();
    },
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}
