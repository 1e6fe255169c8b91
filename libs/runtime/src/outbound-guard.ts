// SSRF protection for outbound requests to addresses that come from data (the executor's tool and model
// calls, the gateway's webhook deliveries). A target is checked twice over: the URL before each hop (scheme, IP
// literals, metadata host names), and every address a host name resolves to, inside the socket's own `lookup`.
// That lookup is the only DNS resolution of the connection, so the address that was checked is the address
// connected to: a second answer from DNS (rebinding) cannot swap it. Allow-listed host names, IPs and CIDRs
// skip the address checks (tests reach 127.0.0.1 this way).
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type BlockList, type LookupFunction } from 'node:net';
import { Agent } from 'undici';
import { cidrList, DeniedReason, deniedReason, normaliseAddress } from './address-ranges.js';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

export interface OutboundGuardOptions {
  /**
   * Targets reachable although private, loopback, link-local or metadata: host names (exact, or `*.example.com`
   * for subdomains), IP addresses and CIDRs (`127.0.0.1`, `10.1.0.0/16`).
   */
  readonly allowHosts?: readonly string[];
  /** DNS resolution of a host name to all its addresses; `dns.lookup` by default. Tests use it to play DNS. */
  readonly resolveHost?: (hostname: string) => Promise<readonly ResolvedAddress[]>;
  /** The error a denial throws; {@link OutboundDeniedError} by default (the executor throws its tool error). */
  readonly deniedError?: (target: string, reason: string) => Error;
}

/** A request the guard refused: where to (`target`, an origin or host name) and why. */
export class OutboundDeniedError extends Error {
  constructor(
    readonly target: string,
    readonly reason: string,
  ) {
    super(`outbound request to ${target} denied: ${reason}`);
    this.name = 'OutboundDeniedError';
  }
}

/** Host names that serve cloud instance metadata without being a metadata IP literal. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata']);

export class OutboundGuard {
  readonly #allowedNames = new Set<string>();
  readonly #allowedSuffixes: string[] = [];
  readonly #allowedAddresses: BlockList;
  readonly #resolveHost: (hostname: string) => Promise<readonly ResolvedAddress[]>;
  readonly #denied: (target: string, reason: string) => Error;

  constructor(options: OutboundGuardOptions = {}) {
    const addressEntries: string[] = [];
    for (const raw of options.allowHosts ?? []) {
      const entry = raw
        .trim()
        .toLowerCase()
        .replace(/^\[|\]$/g, '');
      if (isIP(entry.split('/')[0] ?? '') !== 0) addressEntries.push(entry);
      else if (entry.startsWith('*.')) this.#allowedSuffixes.push(entry.slice(1));
      else if (entry !== '') this.#allowedNames.add(stripTrailingDot(entry));
    }
    this.#allowedAddresses = cidrList(addressEntries);
    this.#resolveHost = options.resolveHost ?? resolveWithDns;
    this.#denied = options.deniedError ?? ((target, reason) => new OutboundDeniedError(target, reason));
  }

  /** Checks what needs no DNS: the scheme, an IP literal host, metadata host names. Throws when denied. */
  checkUrl(url: URL): void {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw this.#denied(url.origin, `scheme ${url.protocol} is not allowed (only http and https)`);
    }
    const host = stripTrailingDot(url.hostname.replace(/^\[|\]$/g, '').toLowerCase());
    if (this.#isAllowedName(host)) return;
    if (isIP(host) !== 0) {
      const reason = this.#addressDenial(host);
      if (reason !== undefined) throw this.#denied(url.origin, reason);
    } else if (METADATA_HOSTS.has(host)) {
      throw this.#denied(url.origin, 'cloud metadata host');
    }
  }

  /** Resolves `hostname` once and checks every address; throws when any of them is denied. */
  async resolve(hostname: string): Promise<readonly ResolvedAddress[]> {
    const host = stripTrailingDot(hostname.toLowerCase());
    const addresses = await this.#resolveHost(hostname);
    if (this.#isAllowedName(host)) return addresses;
    for (const { address } of addresses) {
      const reason = this.#addressDenial(address);
      if (reason !== undefined) {
        throw this.#denied(hostname, `${reason} (${hostname} resolves to ${address})`);
      }
    }
    return addresses;
  }

  /** A `lookup` for `net.connect` that resolves through {@link resolve}, so sockets open only to checked IPs. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (resolved) => {
        const wanted = options.family === 4 || options.family === 6 ? options.family : undefined;
        const usable = resolved.filter((entry) => wanted === undefined || entry.family === wanted);
        const first = usable[0];
        if (first === undefined) {
          const error = Object.assign(new Error(`no usable address for ${hostname}`), { code: 'ENOTFOUND' });
          callback(error, '', 0);
        } else if (options.all)
          callback(
            null,
            usable.map((entry) => ({ ...entry })),
          );
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  /** An undici Agent whose every connection goes through this guard's lookup. */
  createAgent(options: Omit<Agent.Options, 'connect'> = {}): Agent {
    return new Agent({ ...options, connect: { lookup: this.lookup } });
  }

  #isAllowedName(host: string): boolean {
    return this.#allowedNames.has(host) || this.#allowedSuffixes.some((suffix) => host.endsWith(suffix));
  }

  #addressDenial(address: string): string | undefined {
    const normalised = normaliseAddress(address);
    const family = isIP(normalised);
    if (family === 0) return DeniedReason.RESERVED;
    if (this.#allowedAddresses.check(normalised, family === 4 ? 'ipv4' : 'ipv6')) return undefined;
    return deniedReason(normalised);
  }
}

async function resolveWithDns(hostname: string): Promise<readonly ResolvedAddress[]> {
  const entries = await dnsLookup(hostname, { all: true });
  return entries.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

function stripTrailingDot(host: string): string {
  return host.endsWith('.') ? host.slice(0, -1) : host;
}
