import { describe, expect, it } from 'vitest';
import { OutboundGuard, type ResolvedAddress } from './outbound-guard.js';
import { OutboundRequestDeniedError } from '../tool-errors.js';

function denial(action: () => unknown): string | undefined {
  try {
    action();
    return undefined;
  } catch (error) {
    if (error instanceof OutboundRequestDeniedError) return error.message;
    throw error;
  }
}

const resolver =
  (table: Record<string, readonly ResolvedAddress[]>) =>
  async (hostname: string): Promise<readonly ResolvedAddress[]> => {
    const found = table[hostname];
    if (found === undefined)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };

describe('OutboundGuard.checkUrl', () => {
  const guard = new OutboundGuard();

  it.each([
    ['http://127.0.0.1:8080/x', 'outbound request to http://127.0.0.1:8080 denied: loopback address'],
    ['http://[::1]/', 'outbound request to http://[::1] denied: loopback address'],
    ['http://2130706433/', 'outbound request to http://127.0.0.1 denied: loopback address'],
    [
      'http://169.254.169.254/latest/meta-data',
      'outbound request to http://169.254.169.254 denied: cloud metadata address',
    ],
    [
      'http://metadata.google.internal/computeMetadata/v1/',
      'outbound request to http://metadata.google.internal denied: cloud metadata host',
    ],
    ['http://10.0.0.8/', 'outbound request to http://10.0.0.8 denied: private address'],
    ['ftp://example.com/file', 'scheme ftp: is not allowed'],
  ])('when the URL is %s, it is denied', (url, message) => {
    expect(denial(() => guard.checkUrl(new URL(url)))).toContain(message);
  });

  it('when the URL names a public address or a host name, the URL check lets it through (DNS is checked at connect)', () => {
    expect(denial(() => guard.checkUrl(new URL('https://8.8.8.8/')))).toBeUndefined();
    expect(denial(() => guard.checkUrl(new URL('https://api.example.com/v1')))).toBeUndefined();
  });

  it('when the address, its CIDR or the host name is allow-listed, it is allowed', () => {
    const allowing = new OutboundGuard({
      allowHosts: ['127.0.0.1', '10.20.0.0/16', 'metadata.google.internal'],
    });

    expect(denial(() => allowing.checkUrl(new URL('http://127.0.0.1:9/')))).toBeUndefined();
    expect(denial(() => allowing.checkUrl(new URL('http://10.20.3.4/')))).toBeUndefined();
    expect(denial(() => allowing.checkUrl(new URL('http://metadata.google.internal/')))).toBeUndefined();
    expect(denial(() => allowing.checkUrl(new URL('http://10.21.0.1/')))).toContain('private address');
    expect(denial(() => allowing.checkUrl(new URL('http://127.0.0.2/')))).toContain('loopback address');
  });

  it('when an allow-list entry is not an address, CIDR or host name, the guard refuses to start', () => {
    expect(() => new OutboundGuard({ allowHosts: ['10.0.0.0/99'] })).toThrow(/bad prefix length/);
  });
});

describe('OutboundGuard.resolve', () => {
  const table = {
    'api.example.test': [{ address: '93.184.216.34', family: 4 as const }],
    'internal.example.test': [{ address: '10.0.0.5', family: 4 as const }],
    'mixed.example.test': [
      { address: '93.184.216.34', family: 4 as const },
      { address: '::1', family: 6 as const },
    ],
  };

  it('when a host name resolves to public addresses only, they are returned', async () => {
    const guard = new OutboundGuard({ resolveHost: resolver(table) });

    await expect(guard.resolve('api.example.test')).resolves.toEqual(table['api.example.test']);
  });

  it('when a host name resolves to a private address, it is denied naming the address', async () => {
    const guard = new OutboundGuard({ resolveHost: resolver(table) });

    await expect(guard.resolve('internal.example.test')).rejects.toThrow(
      'outbound request to internal.example.test denied: private address (internal.example.test resolves to 10.0.0.5)',
    );
  });

  it('when any address of a host is denied, the host is denied', async () => {
    const guard = new OutboundGuard({ resolveHost: resolver(table) });

    await expect(guard.resolve('mixed.example.test')).rejects.toThrow(/loopback address/);
  });

  it('when the host matches a wildcard allow-list entry, its private addresses are allowed', async () => {
    const guard = new OutboundGuard({ allowHosts: ['*.example.test'], resolveHost: resolver(table) });

    await expect(guard.resolve('internal.example.test')).resolves.toEqual(table['internal.example.test']);
  });
});
