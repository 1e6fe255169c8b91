import { describe, expect, it } from 'vitest';
import { egressDecision, hostMatches } from './grants.js';
import { resolvePolicy } from './policy.js';

describe('network host rules', () => {
  it.each([
    ['*', 'anything.example.org', true],
    ['api.example.com', 'API.example.com', true],
    ['*.example.com', 'api.example.com', true],
    ['*.example.com', '*.example.com', true],
    ['*.example.com', 'example.com', false],
    ['*.example.com', 'evil-example.com', false],
    ['api.example.com', '*', false],
    ['127.0.0.1', '127.0.0.2', false],
  ])('when the policy says %s and the tool asks for %s, the match is %s', (rule, host, expected) => {
    expect(hostMatches(rule, host)).toBe(expected);
  });
});

describe("what a run's proxy lets through", () => {
  it('when the tool was granted a domain, a host of it passes and any other host is refused with the reason', () => {
    const decide = egressDecision(['*.example.com', 'other.org'], ['*.example.com']);

    expect(decide('api.example.com')).toEqual({ allowed: true, publicOnly: false });
    expect(decide('other.org')).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('allowHosts'),
    });
  });

  it('when a host matches the policy only through *, it may reach public addresses only', () => {
    expect(egressDecision(['*'], ['api.example.com'])('api.example.com')).toEqual({
      allowed: true,
      publicOnly: true,
    });
    expect(egressDecision(['*', '127.0.0.1'], ['127.0.0.1'])('127.0.0.1')).toEqual({
      allowed: true,
      publicOnly: false,
    });
  });
});

describe('the global policy', () => {
  const base = { baseDir: '/srv/tools', cacheDir: '/var/cache/scripts', hostEnv: {} };

  it('when the cache directory lies inside the base directory, the runner refuses the configuration', () => {
    expect(() => resolvePolicy({ ...base, cacheDir: '/srv/tools/.cache' })).toThrow(/inside baseDir/);
  });

  it('when a directory is relative or a limit is not positive, the runner refuses the configuration', () => {
    expect(() => resolvePolicy({ ...base, allowWritePaths: ['tmp'] })).toThrow(/absolute/);
    expect(() => resolvePolicy({ ...base, limits: { maxProcesses: 0 } })).toThrow(/maxProcesses/);
  });

  it('when only the directories are given, the defaults fill in the rest', () => {
    expect(resolvePolicy(base)).toMatchObject({
      requireIsolation: true,
      allowNetworkHosts: [],
      allowWritePaths: [],
    });
  });
});
