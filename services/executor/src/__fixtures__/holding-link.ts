// A TCP link on loopback between one client and the NATS server that can hold what the client sends: from
// the moment the test says (or the server sent the client a message on a subject the test names), the
// client's bytes are kept back (its requests, acks and heartbeats reach nobody) while it still receives,
// until the test releases them, in order. That is an executor that stalled on its way to the bus at a
// moment the test chose, or a server that took in what the client sent only after its own timers ran.
import { createServer, Socket, type Server } from 'node:net';

export interface HoldingLink {
  /** `nats://127.0.0.1:<port>`: where the client behind the link connects. */
  readonly url: string;
  /** Resolves once the client's bytes are held (the server sent it a message on the named subject). */
  readonly holding: Promise<void>;
  /** Holds the client's bytes from now on. */
  hold(): void;
  /** Sends what was held, in order, and lets everything through until the next {@link hold}. */
  release(): void;
  close(): Promise<void>;
}

/**
 * With `holdAfterSubjectPrefix`, holds the client's outgoing bytes from the first `MSG <subject>` (or
 * `HMSG`) the server sends it on that subject.
 */
export async function startHoldingLink(
  target: { port: number },
  holdAfterSubjectPrefix?: string,
): Promise<HoldingLink> {
  const sockets = new Set<Socket>();
  let held: Array<{ upstream: Socket; chunk: Buffer }> | undefined;
  let released = false;
  let markHolding = (): void => {};
  const holding = new Promise<void>((resolve) => (markHolding = resolve));
  const marker = ` ${holdAfterSubjectPrefix}`;

  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    const forget = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', forget).on('error', forget);
    upstream.on('close', forget).on('error', forget);
    upstream.connect(target.port, '127.0.0.1');
    // The end of the previous chunk, so a marker split across two chunks is still seen.
    let tail = '';
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      if (held !== undefined || released || holdAfterSubjectPrefix === undefined) return;
      const text = tail + chunk.toString('latin1');
      if (text.includes(`MSG${marker}`)) {
        held = [];
        markHolding();
      }
      tail = text.slice(-(marker.length + 4));
    });
    client.on('data', (chunk: Buffer) => {
      if (held !== undefined && !released) held.push({ upstream, chunk });
      else upstream.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the link has no port');

  return {
    url: `nats://127.0.0.1:${address.port}`,
    holding,
    hold() {
      released = false;
      held ??= [];
      markHolding();
    },
    release() {
      released = true;
      const pending = held ?? [];
      held = undefined;
      for (const { upstream, chunk } of pending) upstream.write(chunk);
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
