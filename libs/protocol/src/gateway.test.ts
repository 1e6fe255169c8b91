import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AgentDefinition, agentModels } from './agent.js';
import { rejectionPaths } from './__fixtures__/rejection-paths.js';
import {
  PreAssembledTaskRequest,
  SubmitTaskReply,
  SubmitTaskRequest,
  isPreAssembledSubmission,
} from './gateway.js';

const request = {
  workflow_id: 'agent_chat',
  user_id: 'u-1',
  messages: [{ role: 'user', content: 'hello' }],
};

describe('gateway bodies', () => {
  it('a submission with an upstream UUID trace id gets it normalised', () => {
    const parsed = SubmitTaskRequest.parse({ ...request, trace_id: 'BDB78B62-6C48-11F0-AF96-FA8DCC0A06B2' });
    expect(parsed.trace_id).toBe('bdb78b626c4811f0af96fa8dcc0a06b2');
  });

  it('a submission without messages, or with a workflow id that is not a key, is rejected at that field', () => {
    expect(rejectionPaths(SubmitTaskRequest, { ...request, messages: [] })).toEqual(['messages']);
    expect(rejectionPaths(SubmitTaskRequest, { ...request, workflow_id: 'a b' })).toEqual(['workflow_id']);
    expect(rejectionPaths(SubmitTaskRequest, { ...request, deadline: 'soon' })).toEqual(['deadline']);
  });

  it('the seed 001 payload is a pre-assembled submission, and a plain one is not', () => {
    const payload: unknown = JSON.parse(
      readFileSync(new URL('./__fixtures__/seeds/001-s2-payload.json', import.meta.url), 'utf8'),
    );
    expect(isPreAssembledSubmission(payload)).toBe(true);
    expect(isPreAssembledSubmission(request)).toBe(false);
    const parsed = PreAssembledTaskRequest.parse({ ...(payload as object), idempotency_key: 'order-42' });
    expect(parsed.idempotency_key).toBe('order-42');
  });

  it('the reply names the trace id, its events subject and SSE url', () => {
    const reply = {
      trace_id: 'bdb78b626c4811f0af96fa8dcc0a06b2',
      events_subject: 'mesh.events.acme.bdb78b626c4811f0af96fa8dcc0a06b2',
      events_url: '/v1/tasks/bdb78b626c4811f0af96fa8dcc0a06b2/events',
    };
    expect(SubmitTaskReply.parse(reply)).toEqual(reply);
  });
});

describe('agent definitions', () => {
  it('default to ten steps and no tools, and name (never hold) the model key', () => {
    const agent = AgentDefinition.parse({
      workflow_id: 'agent_chat',
      model: {
        model_name: 'deepseek-chat',
        base_url: 'http://one-api:3000/v1',
        api_key_credential: 'ONEAPI_KEY',
      },
    });
    expect(agent).toMatchObject({ max_steps: 10, tools: [], model: { provider: 'generic' } });
  });

  it('refuse a model key in clear, naming the field', () => {
    const agent = {
      workflow_id: 'a',
      model: { model_name: 'm', base_url: 'http://one-api:3000/v1', api_key: 'sk-1' },
    };
    expect(rejectionPaths(AgentDefinition, agent)).toEqual(['model.api_key']);
  });

  it('take a known model api, none meaning chat completions, and reject an api the executors do not know, naming the field', () => {
    const model = { model_name: 'claude-sonnet-5', base_url: 'https://api.anthropic.com' };
    expect(agentModels(AgentDefinition.parse({ workflow_id: 'a', model }))[0]?.api).toBeUndefined();
    expect(
      agentModels(
        AgentDefinition.parse({ workflow_id: 'a', model: { ...model, api: 'anthropic-messages' } }),
      )[0]?.api,
    ).toBe('anthropic-messages');
    expect(
      rejectionPaths(AgentDefinition, { workflow_id: 'a', model: { ...model, api: 'anthropic' } }),
    ).toEqual(['model.api']);
  });

  it('take a known provider profile and reject a provider the executors do not know, naming the field', () => {
    const model = { model_name: 'm', base_url: 'https://api.mistral.ai/v1' };
    expect(
      agentModels(AgentDefinition.parse({ workflow_id: 'a', model: { ...model, provider: 'mistral' } }))[0]
        ?.provider,
    ).toBe('mistral');
    expect(
      rejectionPaths(AgentDefinition, { workflow_id: 'a', model: { ...model, provider: 'mistral-ai' } }),
    ).toEqual(['model.provider']);
  });

  it('reject a model base_url that is not http(s)', () => {
    const agent = { workflow_id: 'a', model: { model_name: 'm', base_url: 'file:///etc/passwd' } };
    expect(rejectionPaths(AgentDefinition, agent)).toEqual(['model.base_url']);
  });
  it('take an ordered list of models, each with its own key name, limits and timeouts; a single model is a list of one', () => {
    const one = { model_name: 'm', base_url: 'https://a.example/v1', api_key_credential: 'A_KEY' };
    const two = {
      provider: 'mistral',
      model_name: 'n',
      base_url: 'https://b.example/v1',
      api_key_credential: 'B_KEY',
      first_byte_timeout_ms: 5_000,
      limits: { max_concurrent: 4, rpm: 60, tpm: 100_000 },
    };
    const listed = AgentDefinition.parse({ workflow_id: 'a', model: [one, two] });
    expect(agentModels(listed).map((model) => model.api_key_credential)).toEqual(['A_KEY', 'B_KEY']);
    expect(agentModels(AgentDefinition.parse({ workflow_id: 'a', model: one }))).toHaveLength(1);
  });

  it('take a native api on any model of a list, and reject an unknown one there, naming the entry', () => {
    const chat = { model_name: 'm', base_url: 'https://a.example/v1' };
    const claude = { api: 'anthropic-messages', model_name: 'claude', base_url: 'https://api.anthropic.com' };
    const listed = AgentDefinition.parse({ workflow_id: 'a', model: [chat, claude] });
    expect(agentModels(listed).map((model) => model.api)).toEqual([undefined, 'anthropic-messages']);
    expect(
      rejectionPaths(AgentDefinition, { workflow_id: 'a', model: [chat, { ...claude, api: 'anthropic' }] }),
    ).toEqual(['model[1].api']);
  });

  it('reject an empty or too long model list, limits that are not positive or unknown, and a key in clear in any entry, naming the field', () => {
    const model = { model_name: 'm', base_url: 'https://a.example/v1' };
    expect(rejectionPaths(AgentDefinition, { workflow_id: 'a', model: [] })).toEqual(['model']);
    expect(rejectionPaths(AgentDefinition, { workflow_id: 'a', model: Array(9).fill(model) })).toEqual([
      'model',
    ]);
    expect(
      rejectionPaths(AgentDefinition, { workflow_id: 'a', model: [model, { ...model, limits: { rpm: 0 } }] }),
    ).toEqual(['model[1].limits.rpm']);
    expect(
      rejectionPaths(AgentDefinition, { workflow_id: 'a', model: { ...model, limits: { burst: 3 } } }),
    ).toEqual(['model.limits.burst']);
    expect(
      rejectionPaths(AgentDefinition, { workflow_id: 'a', model: [model, { ...model, api_key: 'sk-x' }] }),
    ).toEqual(['model[1].api_key']);
  });

  it('take an output schema as a JSON object, on the agent and on a submission, and refuse one that is not an object', () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } } };
    const model = { model_name: 'm', base_url: 'https://a.example/v1' };
    expect(AgentDefinition.parse({ workflow_id: 'a', model, output_schema: schema }).output_schema).toEqual(
      schema,
    );
    expect(rejectionPaths(AgentDefinition, { workflow_id: 'a', model, output_schema: 'json' })).toEqual([
      'output_schema',
    ]);
    const request = { workflow_id: 'a', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] };
    expect(SubmitTaskRequest.parse({ ...request, output_schema: schema }).output_schema).toEqual(schema);
    expect(rejectionPaths(SubmitTaskRequest, { ...request, output_schema: [1] })).toEqual(['output_schema']);
  });
});
