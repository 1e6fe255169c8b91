/**
 * Faults for KV mirror tests, on a real connection: a TCP proxy in front of NATS that can cut every
 * connection through it (the server stays up, as in a network fault), and a KV handle whose watches can be
 * held back, ended or refused, and whose reads are counted.
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import type { KV } from '@nats-io/kv';

export interface TcpProxy {
  /** `nats://127.0.0.1:<port>` of the proxy. */
  readonly url: string;
  /** Drops every connection through the proxy and refuses new ones until {@link restore}. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let open = true;
  const server: Server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `nats://127.0.0.1:${port}`,
    cut() {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      open = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

type Watch = Awaited<ReturnType<KV['watch']>>;

export interface FaultyKv {
  readonly kv: KV;
  /** `get` calls so far. */
  reads(): number;
  /** `watch` calls so far. */
  watches(): number;
  /** The watches started so far, to end one as a failure would. */
  readonly started: Watch[];
  /** Watches refuse to start while this is set. */
  refuseWatches: Error | undefined;
  /** Updates (entries after the initial pass) wait while held, as behind a lagging watch. */
  hold(): void;
  release(): void;
}

export function faultyKv(kv: KV): FaultyKv {
  let reads = 0;
  let watches = 0;
  let held: { wake: () => void } | undefined;
  const faults: FaultyKv = {
    kv: undefined as unknown as KV,
    reads: () => reads,
    watches: () => watches,
    started: [],
    refuseWatches: undefined,
    hold() {
      held ??= { wake: () => {} };
    },
    release() {
      const wake = held?.wake;
      held = undefined;
      wake?.();
    },
  };
  const wrapWatch = (watch: Watch): Watch => {
    const gated = (async function* () {
      for await (const entry of watch) {
        while (held !== undefined && entry.isUpdate) {
          await new Promise<void>((resolve) => (held!.wake = resolve));
        }
        yield entry;
      }
    })();
    return Object.assign(gated, { stop: () => watch.stop() }) as unknown as Watch;
  };
  (faults as { kv: KV }).kv = new Proxy(kv, {
    get(target, property, receiver) {
      if (property === 'get') {
        return (key: string) => {
          reads++;
          return target.get(key);
        };
      }
      if (property === 'watch') {
        return async (options?: Parameters<KV['watch']>[0]) => {
          watches++;
          if (faults.refuseWatches) throw faults.refuseWatches;
          const watch = await target.watch(options);
          faults.started.push(watch);
          return wrapWatch(watch);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return faults;
}
