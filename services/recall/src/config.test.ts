import { ConfigError, loadConfig } from '@agentmesh/runtime';
import { describe, expect, it } from 'vitest';
import { DEFAULT_API_URL_TEMPLATE, recallConfigSchema } from './config.js';

const REQUIRED = { ONTOLOGY_QUERY_URL: 'http://ontology-query:13018' };

describe('recall configuration', () => {
  it('when only the ontology-query URL is given, every other variable has its default', () => {
    const config = loadConfig(recallConfigSchema, REQUIRED);
    expect(config).toMatchObject({
      OPERATOR_INTEGRATION_URL: 'http://agent-operator-integration:9000',
      API_URL_TEMPLATE: DEFAULT_API_URL_TEMPLATE,
      CACHE_ENABLED: true,
      UPSTREAM_RETRIES: 2,
    });
  });

  it('when CACHE_ENABLED is "false" or "0", caching is off (not coerced to true)', () => {
    expect(loadConfig(recallConfigSchema, { ...REQUIRED, CACHE_ENABLED: 'false' }).CACHE_ENABLED).toBe(false);
    expect(loadConfig(recallConfigSchema, { ...REQUIRED, CACHE_ENABLED: '0' }).CACHE_ENABLED).toBe(false);
  });

  it('when the ontology-query URL is missing or the template lacks a placeholder, start-up is refused naming the variable', () => {
    expect(() => loadConfig(recallConfigSchema, {})).toThrow(/ONTOLOGY_QUERY_URL/);
    const error = (() => {
      try {
        loadConfig(recallConfigSchema, {
          ...REQUIRED,
          API_URL_TEMPLATE: 'http://proxy/{box_id}',
          CACHE_ENABLED: 'maybe',
        });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.variable)).toEqual([
      'API_URL_TEMPLATE',
      'CACHE_ENABLED',
    ]);
  });
});
