import { describe, expect, it } from 'vitest';
import { isPublicAddress, parseHead } from './egress-proxy.js';

describe("the proxy's request heads", () => {
  it('when a client asks for a CONNECT tunnel, host and port are taken from the authority', () => {
    expect(parseHead('CONNECT API.Example.com.:443 HTTP/1.1\r\nHost: api.example.com:443')).toMatchObject({
      connect: true,
      host: 'api.example.com',
      port: 443,
    });
    expect(parseHead('CONNECT [::1]:8443 HTTP/1.1')).toMatchObject({
      connect: true,
      host: '::1',
      port: 8443,
    });
  });

  it('when a client sends a plain http request, it is forwarded in origin form with one request per connection', () => {
    const parsed = parseHead(
      'GET http://example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive',
    );

    expect(parsed).toMatchObject({ connect: false, host: 'example.com', port: 8080 });
    const forward = typeof parsed === 'string' ? '' : (parsed.forward?.toString('latin1') ?? '');
    expect(forward).toBe('GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n');
  });

  it.each([
    ['GET /relative HTTP/1.1', 'absolute'],
    ['GET https://example.com/ HTTP/1.1', 'CONNECT for https'],
    ['CONNECT example.com HTTP/1.1', 'host:port'],
    ['CONNECT example.com:70000 HTTP/1.1', 'host:port'],
    ['hello', 'not an HTTP'],
  ])('when a client sends %j, it is refused as a bad request (%s)', (head, reason) => {
    expect(parseHead(head)).toContain(reason);
  });
});

describe('public addresses', () => {
  it.each([
    ['93.184.216.34', true],
    ['2606:2800:220:1:248:1893:25c8:1946', true],
    ['127.0.0.1', false],
    ['127.0.0.2', false],
    ['10.1.2.3', false],
    ['172.20.0.1', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['::1', false],
    ['fe80::1', false],
    ['fd00::1', false],
    ['::ffff:127.0.0.1', false],
    ['not-an-address', false],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});
