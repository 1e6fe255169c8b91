import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '@agentmesh/runtime';
import { describe, expect, it } from 'vitest';
import { conversionRulesOf, DEFAULT_API_URL_TEMPLATE, recallConfigSchema } from './config.js';
import { DEFAULT_CONVERSION_RULES } from './conversion-rules.js';

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

function configProblems(env: Record<string, string>): Array<{ variable: string; message: string }> {
  try {
    loadConfig(recallConfigSchema, { ...REQUIRED, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  throw new Error('the configuration was accepted');
}

describe('conversion rules', () => {
  it('when no rules are configured, the rules are the defaults with API_URL_TEMPLATE as api_url', () => {
    const config = loadConfig(recallConfigSchema, {
      ...REQUIRED,
      API_URL_TEMPLATE: 'http://p/{box_id}/{tool_id}',
    });
    expect(conversionRulesOf(config)).toEqual({
      ...DEFAULT_CONVERSION_RULES,
      api_url: 'http://p/{box_id}/{tool_id}',
    });
  });

  it('when CONVERSION_RULES or CONVERSION_RULES_FILE holds rules, they are read, and the rules’ api_url wins', () => {
    const rules = {
      tool_name: '{at_id}_{tool_name}',
      api_url: 'https://proxy.internal/{box_id}/x/{tool_id}',
    };
    const inline = loadConfig(recallConfigSchema, { ...REQUIRED, CONVERSION_RULES: JSON.stringify(rules) });
    expect(conversionRulesOf(inline)).toMatchObject(rules);
    const file = join(mkdtempSync(join(tmpdir(), 'recall-rules-')), 'rules.json');
    writeFileSync(file, JSON.stringify({ fixed_params: { undeclared_location: 'header' } }));
    const fromFile = loadConfig(recallConfigSchema, { ...REQUIRED, CONVERSION_RULES_FILE: file });
    expect(conversionRulesOf(fromFile)).toMatchObject({
      fixed_params: { undeclared_location: 'header', hide_fixed: true },
      api_url: DEFAULT_API_URL_TEMPLATE,
    });
  });

  it('when a rule is bad, start-up is refused naming the variable and the rule', () => {
    expect(configProblems({ CONVERSION_RULES: JSON.stringify({ tool_name: '{tool} x' }) })).toEqual([
      {
        variable: 'CONVERSION_RULES',
        message: expect.stringMatching(/^bad conversion rule: tool_name: unknown placeholder \{tool\}/),
      },
    ]);
    expect(configProblems({ CONVERSION_RULES: JSON.stringify({ plural_tool_name: '{tool_name}' }) })).toEqual(
      [
        {
          variable: 'CONVERSION_RULES',
          message: expect.stringContaining('plural_tool_name: must contain {action_id}'),
        },
      ],
    );
    expect(
      configProblems({
        CONVERSION_RULES: JSON.stringify({ fixed_params: { undeclared_location: 'cookie' } }),
      }),
    ).toEqual([
      { variable: 'CONVERSION_RULES', message: expect.stringContaining('fixed_params.undeclared_location') },
    ]);
    expect(configProblems({ CONVERSION_RULES: JSON.stringify({ toolname: 'x' }) })[0]?.message).toMatch(
      /toolname/,
    );
    expect(configProblems({ CONVERSION_RULES: '{not json' })[0]?.message).toMatch(/^not JSON/);
    expect(configProblems({ CONVERSION_RULES_FILE: '/nonexistent/rules.json' })).toEqual([
      {
        variable: 'CONVERSION_RULES_FILE',
        message: expect.stringMatching(/^cannot read \/nonexistent\/rules.json/),
      },
    ]);
    const file = join(mkdtempSync(join(tmpdir(), 'recall-rules-')), 'rules.json');
    writeFileSync(file, '{}');
    expect(configProblems({ CONVERSION_RULES: '{}', CONVERSION_RULES_FILE: file })).toEqual([
      {
        variable: 'CONVERSION_RULES_FILE',
        message: 'set CONVERSION_RULES or CONVERSION_RULES_FILE, not both',
      },
    ]);
  });
});
