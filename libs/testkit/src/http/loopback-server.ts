/**
 * Runs a node:http server on 127.0.0.1 with an ephemeral port, and stops it for good: open and
 * hanging connections are closed too, so `stop()` never waits on a client.
 */
import { createServer, type RequestListener, type Server } from 'node:http';

export interface LoopbackServer {
  server: Server;
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  stop(): Promise<void>;
}

export async function startLoopbackServer(listener: RequestListener): Promise<LoopbackServer> {
  const server = createServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('test HTTP server has no TCP address');
  let stopped: Promise<void> | undefined;
  return {
    server,
    port: address.port,
    origin: `http://127.0.0.1:${address.port}`,
    stop: () => {
      stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}
