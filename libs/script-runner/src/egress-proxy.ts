/**
 * A run's only way out to the network: an HTTP proxy on a unix socket (the namespace helper relays the
 * sandbox's 127.0.0.1:PROXY_PORT to it). It understands `CONNECT host:port` (HTTPS and any other TCP
 * protocol) and plain-HTTP requests in absolute form, and lets a connection through only to a host the
 * run's decision allows. Names are resolved here, once, and the connection goes to the address that was
 * checked (no second lookup a rebinding DNS could answer differently). Whatever the script sends after
 * the request head goes to that one upstream connection only, so a pipelined request naming another
 * host cannot reach it.
 */
import { lookup } from 'node:dns/promises';
import { chmod } from 'node:fs/promises';
import { BlockList, connect, createServer, isIP, type Server, type Socket } from 'node:net';
import type { EgressDecision } from './grants.js';

export interface EgressProxyOptions {
  readonly socketPath: string;
  readonly decide: (host: string) => EgressDecision;
  /** Refusals and failures are noted here (bounded), for the run's logs. */
  readonly logs: string[];
}

export interface EgressProxy {
  close(): Promise<void>;
}

const MAX_HEAD_BYTES = 16 * 1024;
const HEAD_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_CONNECTIONS = 64;
const MAX_LOG_LINES = 20;

/** Loopback, private, link-local, shared, documentation, multicast and reserved ranges. */
const NON_PUBLIC = (() => {
  const list = new BlockList();
  for (const [network, prefix] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.0.2.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ] as const) {
    list.addSubnet(network, prefix, 'ipv4');
  }
  for (const [network, prefix] of [
    ['::', 128],
    ['::1', 128],
    ['64:ff9b::', 96],
    ['100::', 64],
    ['2001:db8::', 32],
    ['fc00::', 7],
    ['fe80::', 10],
    ['ff00::', 8],
  ] as const) {
    list.addSubnet(network, prefix, 'ipv6');
  }
  return list;
})();

export function isPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return isPublicAddress(mapped);
  const family = isIP(address);
  if (family === 0) return false;
  return !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const sockets = new Set<Socket>();
  const note = (line: string) => {
    if (options.logs.length < MAX_LOG_LINES) options.logs.push(`network: ${line}`);
  };
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    void handle(client, options.decide, note, sockets);
  });
  server.maxConnections = MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await chmod(options.socketPath, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

interface ParsedHead {
  readonly connect: boolean;
  readonly host: string;
  readonly port: number;
  /** The head to send upstream (plain HTTP only). */
  readonly forward?: Buffer;
}

async function handle(
  client: Socket,
  decide: (host: string) => EgressDecision,
  note: (line: string) => void,
  sockets: Set<Socket>,
): Promise<void> {
  const read = await readHead(client);
  if (read === undefined) return reply(client, 400, 'the request head is missing, too large or too slow');
  const parsed = parseHead(read.head);
  if (typeof parsed === 'string') return reply(client, 400, parsed);
  const target = `${parsed.host}:${parsed.port}`;
  const decision = decide(parsed.host);
  if (!decision.allowed) {
    note(`refused ${target}: ${decision.reason}`);
    return reply(client, 403, `${target} is not allowed: ${decision.reason}`);
  }
  let address: string;
  try {
    address = await chooseAddress(parsed.host, decision.publicOnly);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    note(`refused ${target}: ${reason}`);
    return reply(client, 403, `${target} is not allowed: ${reason}`);
  }
  const upstream = connect({ host: address, port: parsed.port, timeout: CONNECT_TIMEOUT_MS });
  sockets.add(upstream);
  let connected = false;
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  upstream.on('close', () => {
    sockets.delete(upstream);
    client.destroy();
  });
  client.on('close', () => upstream.destroy());
  upstream.once('timeout', () => {
    note(`could not reach ${target}: timed out`);
    reply(client, 504, `${target} did not answer`);
    upstream.destroy();
  });
  upstream.once('error', (error) => {
    if (!connected) {
      note(`could not reach ${target}: ${error.message}`);
      reply(client, 502, `${target} could not be reached`);
    }
    close();
  });
  upstream.once('connect', () => {
    connected = true;
    upstream.setTimeout(0);
    if (parsed.connect) client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    else if (parsed.forward !== undefined) upstream.write(parsed.forward);
    if (read.rest.length > 0) upstream.write(read.rest);
    client.pipe(upstream);
    upstream.pipe(client);
  });
}

async function chooseAddress(host: string, publicOnly: boolean): Promise<string> {
  const literal = host.replace(/^\[(.*)\]$/, '$1');
  const addresses =
    isIP(literal) !== 0
      ? [literal]
      : (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
  const usable = publicOnly ? addresses.filter(isPublicAddress) : addresses;
  const chosen = usable[0];
  if (chosen === undefined) {
    throw new Error(
      addresses.length === 0
        ? 'the name does not resolve'
        : 'it resolves only to loopback, private or reserved addresses, which the policy must name explicitly',
    );
  }
  return chosen;
}

function readHead(client: Socket): Promise<{ head: string; rest: Buffer } | undefined> {
  return new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => finish(undefined), HEAD_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end >= 0) {
        finish({
          head: buffered.subarray(0, end).toString('latin1'),
          rest: buffered.subarray(end + 4),
        });
      } else if (buffered.length > MAX_HEAD_BYTES) finish(undefined);
    };
    const onEnd = () => finish(undefined);
    function finish(result: { head: string; rest: Buffer } | undefined) {
      clearTimeout(timer);
      client.off('data', onData);
      client.off('end', onEnd);
      client.off('close', onEnd);
      client.pause();
      resolve(result);
    }
    client.on('data', onData);
    client.on('end', onEnd);
    client.on('close', onEnd);
  });
}

const HOP_BY_HOP = /^(connection|proxy-connection|keep-alive|proxy-authorization|proxy-authenticate)$/i;

export function parseHead(head: string): ParsedHead | string {
  const [requestLine = '', ...headerLines] = head.split('\r\n');
  const match = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(requestLine);
  if (match === null) return 'not an HTTP/1.x proxy request';
  const [, method, target = ''] = match;
  if (method === 'CONNECT') {
    const authority = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/\s]+):(\d{1,5})$/.exec(target);
    const port = Number(authority?.[2]);
    if (authority?.[1] === undefined || !validPort(port)) return 'CONNECT needs host:port';
    return { connect: true, host: normaliseTarget(authority[1]), port };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return 'a proxy request names an absolute http:// URL (or uses CONNECT)';
  }
  if (url.protocol !== 'http:') return 'only http:// requests are forwarded; use CONNECT for https';
  const port = url.port === '' ? 80 : Number(url.port);
  if (!validPort(port) || url.hostname === '') return 'the URL has no valid host and port';
  // One request per upstream connection: the server closes after answering, so the client opens a new
  // proxy connection (and gets a new decision) for its next request.
  const headers = headerLines.filter((line) => !HOP_BY_HOP.test(line.split(':', 1)[0]?.trim() ?? ''));
  const originForm = `${method} ${url.pathname}${url.search} HTTP/1.1`;
  const forward = Buffer.from([originForm, ...headers, 'Connection: close', '', ''].join('\r\n'), 'latin1');
  return { connect: false, host: normaliseTarget(url.hostname), port, forward };
}

function normaliseTarget(host: string): string {
  return host
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase()
    .replace(/\.$/, '');
}

function validPort(port: number): boolean {
  return Number.isInteger(port) && port > 0 && port < 65_536;
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  403: 'Forbidden',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
};

function reply(client: Socket, status: number, message: string): void {
  if (client.destroyed) return;
  const body = `${message}\n`;
  client.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? ''}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
