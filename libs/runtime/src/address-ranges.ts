// Which IP addresses an outbound request (a tool call, a webhook) may not reach unless allow-listed, and why: everything that is not the public
// internet. IPv6 forms that embed an IPv4 address (mapped, NAT64, 6to4) are judged by the embedded address,
// so `::ffff:127.0.0.1` is loopback too.
import { BlockList, isIP } from 'node:net';

export const DeniedReason = {
  METADATA: 'cloud metadata address',
  UNSPECIFIED: 'unspecified address',
  LOOPBACK: 'loopback address',
  PRIVATE: 'private address',
  LINK_LOCAL: 'link-local address',
  CGNAT: 'carrier-grade NAT address',
  MULTICAST: 'multicast address',
  RESERVED: 'reserved address',
} as const;
export type DeniedReason = (typeof DeniedReason)[keyof typeof DeniedReason];

/** Checked in this order, so 169.254.169.254 reads as metadata rather than link-local. */
const DENIED_RANGES: ReadonlyArray<readonly [DeniedReason, readonly string[]]> = [
  [DeniedReason.METADATA, ['169.254.169.254/32', '100.100.100.200/32', 'fd00:ec2::254/128']],
  [DeniedReason.UNSPECIFIED, ['0.0.0.0/8', '::/128']],
  [DeniedReason.LOOPBACK, ['127.0.0.0/8', '::1/128']],
  [DeniedReason.PRIVATE, ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']],
  [DeniedReason.LINK_LOCAL, ['169.254.0.0/16', 'fe80::/10']],
  [DeniedReason.CGNAT, ['100.64.0.0/10']],
  [DeniedReason.MULTICAST, ['224.0.0.0/4', 'ff00::/8']],
  [
    DeniedReason.RESERVED,
    [
      '192.0.0.0/24',
      '192.0.2.0/24',
      '198.18.0.0/15',
      '198.51.100.0/24',
      '203.0.113.0/24',
      '240.0.0.0/4',
      '::/96',
      '100::/64',
      '2001:db8::/32',
    ],
  ],
];

const DENIED_LISTS: ReadonlyArray<readonly [DeniedReason, BlockList]> = DENIED_RANGES.map(
  ([reason, cidrs]) => [reason, cidrList(cidrs)] as const,
);

/** Why `address` may not be reached, or undefined for a public address. */
export function deniedReason(address: string): DeniedReason | undefined {
  const normalised = normaliseAddress(address);
  const family = isIP(normalised);
  if (family === 0) return DeniedReason.RESERVED;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return DENIED_LISTS.find(([, list]) => list.check(normalised, type))?.[0];
}

/** A BlockList of CIDRs or single addresses (`10.0.0.0/8`, `::1`). Throws on an entry that is neither. */
export function cidrList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [network = '', prefixText] = entry.split('/');
    const family = isIP(network);
    if (family === 0) throw new RangeError(`not an IP address or CIDR: ${entry}`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefixText === undefined) {
      list.addAddress(network, type);
      continue;
    }
    const prefix = Number(prefixText);
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) {
      throw new RangeError(`bad prefix length in CIDR: ${entry}`);
    }
    list.addSubnet(network, prefix, type);
  }
  return list;
}

/**
 * The address to judge: without brackets or zone id, and the embedded IPv4 address for IPv4-mapped
 * (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses.
 */
export function normaliseAddress(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(bare) !== 6) return bare;
  const bytes = ipv6Bytes(bare);
  const isMapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  const isNat64 =
    bytes[0] === 0 &&
    bytes[1] === 0x64 &&
    bytes[2] === 0xff &&
    bytes[3] === 0x9b &&
    bytes.slice(4, 12).every((b) => b === 0);
  if (isMapped || isNat64) return bytes.slice(12, 16).join('.');
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6).join('.');
  return bare;
}

/** The 16 bytes of a valid IPv6 address (which may end in a dotted IPv4 part). */
function ipv6Bytes(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = Array.from({ length: 8 - headGroups.length - tailGroups.length }, () => '0');
  const groups = tail === undefined ? headGroups : [...headGroups, ...zeros, ...tailGroups];
  return groups.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}
