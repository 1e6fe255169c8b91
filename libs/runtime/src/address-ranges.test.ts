import { describe, expect, it } from 'vitest';
import { deniedReason, normaliseAddress } from './address-ranges.js';

describe('deniedReason', () => {
  it.each([
    ['10.1.2.3', 'private address'],
    ['172.16.0.1', 'private address'],
    ['172.31.255.255', 'private address'],
    ['192.168.1.1', 'private address'],
    ['fd12:3456::1', 'private address'],
    ['127.0.0.1', 'loopback address'],
    ['127.8.9.10', 'loopback address'],
    ['::1', 'loopback address'],
    ['169.254.10.10', 'link-local address'],
    ['fe80::1', 'link-local address'],
    ['fe80::1%eth0', 'link-local address'],
    ['100.64.0.1', 'carrier-grade NAT address'],
    ['0.0.0.0', 'unspecified address'],
    ['::', 'unspecified address'],
    ['224.0.0.1', 'multicast address'],
    ['ff02::1', 'multicast address'],
    ['255.255.255.255', 'reserved address'],
    ['169.254.169.254', 'cloud metadata address'],
    ['fd00:ec2::254', 'cloud metadata address'],
    ['::ffff:127.0.0.1', 'loopback address'],
    ['::ffff:7f00:1', 'loopback address'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata address'],
    ['2002:0a00:0001::', 'private address'],
  ])('when the address is %s, it is denied as a %s', (address, reason) => {
    expect(deniedReason(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    'when the address is public (%s), it is not denied',
    (address) => {
      expect(deniedReason(address)).toBeUndefined();
    },
  );

  it('when an IPv6 address embeds an IPv4 one, it is judged by the IPv4 address', () => {
    expect(normaliseAddress('[::ffff:10.0.0.1]')).toBe('10.0.0.1');
    expect(normaliseAddress('2606:4700::1111')).toBe('2606:4700::1111');
  });
});
