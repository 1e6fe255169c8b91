/**
 * Free loopback TCP ports for servers that cannot be told to pick their own (NATS in a host-network
 * container). Each port is proven free by binding it on 127.0.0.1; all sockets of one call are held
 * open together so the ports of one call are distinct. Another process may still take a port before
 * the server binds it: callers retry with fresh ports when the server reports the address in use.
 */
import { createServer, type Server } from 'node:net';

export async function findFreePorts(count: number): Promise<number[]> {
  if (!Number.isInteger(count) || count < 1) {
    throw new RangeError(`findFreePorts: count must be a positive integer, got ${String(count)}`);
  }
  const held: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const server = createServer();
      held.push(server);
      ports.push(await bindEphemeral(server));
    }
    return ports;
  } finally {
    await Promise.all(held.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
}

export async function findFreePort(): Promise<number> {
  const [port] = await findFreePorts(1);
  if (port === undefined) throw new Error('findFreePort: no port found');
  return port;
}

function bindEphemeral(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address && typeof address === 'object') resolve(address.port);
      else reject(new Error('free port: listening socket has no TCP address'));
    });
  });
}
