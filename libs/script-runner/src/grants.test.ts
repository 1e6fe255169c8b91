import { describe, expect, it } from 'vitest';
import { hostMatches } from './grants.js';
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
