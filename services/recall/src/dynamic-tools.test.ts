import { FUNCTION_NAME_PATTERN, type Action } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { seedExample } from './__fixtures__/seed-004.js';
import { convertTool } from './converted-tool.js';
import { ConversionRules } from './conversion-rules.js';
import { actionIdOf, dynamicToolsFor } from './dynamic-tools.js';

const REF = { boxId: 'box', toolId: 'tool' };
const API_URL = 'http://proxy.test/tool-box/box/proxy/tool';
const action = (parameters: Record<string, unknown>): Action => ({ parameters });

describe('dynamic tools from the seed appendix tool', () => {
  const { toolDetail } = seedExample('004-s11.1-response.json');
  const tool = convertTool(toolDetail, REF);

  it('when the action fixes the account headers, they go to fixed_params.header and leave the model schema', () => {
    const [dynamic] = dynamicToolsFor(
      tool,
      [action({ 'x-account-id': 'test', 'x-account-type': 'user' })],
      API_URL,
      false,
    );
    expect(dynamic?.fixed_params.header).toMatchObject({ 'x-account-id': 'test', 'x-account-type': 'user' });
    expect(Object.keys(dynamic?.parameters.properties ?? {})).not.toContain('x-account-id');
    expect(dynamic?.parameters.required).toEqual(['kn_id', 'ot_id']);
  });

  it('when the spec pins a required header to one value, it is fixed too (X-HTTP-Method-Override: GET)', () => {
    const [dynamic] = dynamicToolsFor(tool, [action({})], API_URL, false);
    expect(dynamic?.fixed_params.header).toEqual({ 'X-HTTP-Method-Override': 'GET' });
    expect(dynamic?.parameters.properties).not.toHaveProperty('X-HTTP-Method-Override');
    // The account headers are not fixed by this action, so the model is still asked for them.
    expect(dynamic?.parameters.required).toEqual(['kn_id', 'ot_id', 'x-account-id', 'x-account-type']);
  });

  it('when an action fixes a header under another case, the pinned value does not double it', () => {
    const [dynamic] = dynamicToolsFor(tool, [action({ 'x-http-method-override': 'GET' })], API_URL, false);
    expect(dynamic?.fixed_params.header).toEqual({ 'x-http-method-override': 'GET' });
  });

  it('when an action fixes a path or body argument, it is placed there and hidden from the model', () => {
    const [dynamic] = dynamicToolsFor(
      tool,
      [action({ kn_id: 'kn_medical', limit: 5, unknown: 1 })],
      API_URL,
      false,
    );
    expect(dynamic?.fixed_params).toMatchObject({
      path: { kn_id: 'kn_medical' },
      body: { limit: 5, unknown: 1 },
    });
    expect(Object.keys(dynamic?.parameters.properties ?? {})).not.toContain('kn_id');
    expect(Object.keys(dynamic?.parameters.properties ?? {})).not.toContain('limit');
    expect(dynamic?.original_schema).toEqual(toolDetail.api_spec);
  });

  it('when the input is singular, only actions[0] becomes a tool, under the tool detail’s own name', () => {
    const tools = dynamicToolsFor(tool, [action({ a: 1 }), action({ a: 2 })], API_URL, false);
    expect(tools).toHaveLength(1);
    expect(tools[0]?.name).toBe(toolDetail.name);
    expect(tools[0]?.fixed_params.body).toEqual({ a: 1 });
    expect(tools[0]).not.toHaveProperty('action_id');
  });

  it('when the input is plural, every distinct action becomes a tool with a distinct legal name and action_id, and a repeated one is one tool', () => {
    const actions = [action({ a: 1 }), action({ a: 2 }), action({ a: 2 })];
    const tools = dynamicToolsFor(tool, actions, API_URL, true);
    expect(tools).toHaveLength(2);
    const names = tools.map((t) => t.name);
    const ids = tools.map((t) => t.action_id);
    expect(new Set(names).size).toBe(2);
    expect(new Set(ids).size).toBe(2);
    for (const name of names) expect(name).toMatch(FUNCTION_NAME_PATTERN);
    expect(tools.map((t) => t.fixed_params.body)).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it('when the same action is recalled again, it gets the same action_id and name (key order does not matter)', () => {
    expect(actionIdOf(action({ a: 1, b: 2 }))).toBe(actionIdOf(action({ b: 2, a: 1 })));
    const first = dynamicToolsFor(tool, [action({ a: 1 })], API_URL, true);
    const again = dynamicToolsFor(tool, [action({ a: 1 })], API_URL, true);
    expect(again[0]?.name).toBe(first[0]?.name);
  });
});

describe('fixed parameters when the spec cannot be read', () => {
  it('when the spec declares a cookie parameter the action fixes, it stays in fixed_params.cookie', () => {
    const tool = convertTool(
      {
        name: 'with_cookie',
        description: '',
        api_spec: {
          parameters: [{ name: 'session', in: 'cookie', required: true, schema: { type: 'string' } }],
        },
      },
      REF,
    );
    const [dynamic] = dynamicToolsFor(tool, [action({ session: 's-1' })], API_URL, false);
    expect(dynamic?.fixed_params.cookie).toEqual({ session: 's-1' });
  });

  it('when api_spec.parameters is not a list, names decide: x-* and Authorization are headers, the rest body', () => {
    const tool = convertTool(
      { name: 'broken', description: '', api_spec: { parameters: 'not a list' } },
      REF,
    );
    const [dynamic] = dynamicToolsFor(
      tool,
      [action({ 'X-Trace': 't', Authorization: 'a', kn_id: 'k' })],
      API_URL,
      false,
    );
    expect(dynamic?.fixed_params).toEqual({
      header: { 'X-Trace': 't', Authorization: 'a' },
      path: {},
      query: {},
      body: { kn_id: 'k' },
    });
  });
});

describe('conversion rules of a deployment', () => {
  const { toolDetail } = seedExample('004-s11.1-response.json');
  const tool = convertTool(toolDetail, REF);
  const origin = { knId: 'kn_medical', atId: 'generate_treatment_plan', boxId: 'box', toolId: 'tool' };

  it('when the rules set name and description templates, the tool is named and described by them', () => {
    const rules = ConversionRules.parse({
      tool_name: '{at_id}__{tool_id}',
      plural_tool_name: 'kn_{kn_id}_{action_id}',
      description: '{tool_description} (action type {at_id} of {kn_id})',
    });
    const [single] = dynamicToolsFor(tool, [action({})], API_URL, false, rules, origin);
    expect(single?.name).toBe('generate_treatment_plan__tool');
    expect(single?.description).toBe(
      `${toolDetail.description} (action type generate_treatment_plan of kn_medical)`,
    );
    const [plural] = dynamicToolsFor(tool, [action({ a: 1 })], API_URL, true, rules, origin);
    expect(plural?.name).toBe(`kn_kn_medical_${actionIdOf(action({ a: 1 }))}`);
  });

  it('when undeclared parameters go to the query and fixed arguments stay visible, the tool says so', () => {
    const rules = ConversionRules.parse({
      fixed_params: { undeclared_location: 'query', hide_fixed: false, pin_single_valued: false },
    });
    const [dynamic] = dynamicToolsFor(
      tool,
      [action({ kn_id: 'kn_medical', limit: 5, tenant: 't1' })],
      API_URL,
      false,
      rules,
    );
    // limit is a declared body property and stays in the body; tenant is declared nowhere.
    expect(dynamic?.fixed_params).toEqual({
      header: {},
      path: { kn_id: 'kn_medical' },
      query: { tenant: 't1' },
      body: { limit: 5 },
    });
    expect(Object.keys(dynamic?.parameters.properties ?? {})).toEqual(
      expect.arrayContaining(['kn_id', 'limit', 'X-HTTP-Method-Override']),
    );
  });

  it('when no rule is given, the defaults are the seed’s behaviour', () => {
    const defaults = ConversionRules.parse({});
    const input = [action({ 'x-account-id': 'test', limit: 5, tenant: 't1' })];
    expect(dynamicToolsFor(tool, input, API_URL, false, defaults, origin)).toEqual(
      dynamicToolsFor(tool, input, API_URL, false),
    );
  });
});
