import { describe, expect, it } from 'vitest';
import { rejectionPaths } from './__fixtures__/rejection-paths.js';
import {
  ActionQueryResponse,
  ActionRecallRequest,
  ActionRecallResponse,
  RecallRequest,
  ToolDetailResponse,
  recallIdentities,
} from './recall.js';

const nats = {
  kn_id: 'kn_medical',
  at_id: 'generate_treatment_plan',
  account_id: 'test',
  account_type: 'user',
};

describe('recall requests', () => {
  it('take one unique_identity (seed 004 v1) or several unique_identities', () => {
    const single = RecallRequest.parse({ ...nats, unique_identity: { disease_id: 'disease_000001' } });
    const plural = RecallRequest.parse({
      ...nats,
      unique_identities: [{ disease_id: 'd1' }, { disease_id: 'd2' }],
    });
    expect(recallIdentities(single)).toEqual([{ disease_id: 'disease_000001' }]);
    expect(recallIdentities(plural)).toHaveLength(2);
  });

  it('accept string, number and boolean identity values', () => {
    const mixed = { unique_identity: { id: 'x', version: 3, active: true } };
    expect(ActionRecallRequest.safeParse(mixed).success).toBe(true);
  });

  it('reject neither or both identity forms at unique_identity', () => {
    expect(rejectionPaths(ActionRecallRequest, {})).toEqual(['unique_identity']);
    const both = { unique_identity: { a: 1 }, unique_identities: [{ a: 1 }] };
    expect(rejectionPaths(ActionRecallRequest, both)).toEqual(['unique_identity']);
  });

  it('reject malformed identities with the offending path (seed 004: INVALID_REQUEST)', () => {
    expect(rejectionPaths(ActionRecallRequest, { unique_identity: { disease_id: null } })).toEqual([
      'unique_identity.disease_id',
    ]);
    expect(rejectionPaths(ActionRecallRequest, { unique_identity: {} })).toEqual(['unique_identity']);
    expect(rejectionPaths(ActionRecallRequest, { unique_identities: [] })).toEqual(['unique_identities']);
  });

  it('need the path parameters and account headers over NATS', () => {
    const { kn_id: _kn, account_type: _type, ...partial } = nats;
    const paths = rejectionPaths(RecallRequest, { ...partial, unique_identity: { a: 1 } });
    expect(paths).toEqual(['kn_id', 'account_type']);
  });
});

describe('upstream responses', () => {
  it('an action query answer keeps the fields we do not read', () => {
    const answer = ActionQueryResponse.parse({
      actions: [
        { parameters: { 'x-account-id': 'test' }, dynamic_params: { limit: null }, _instance_id: 'i1' },
      ],
      action_source: { type: 'tool', box_id: 'b', tool_id: 't', version: 3 },
      total: 1,
    });
    expect(answer).toMatchObject({
      total: 1,
      action_source: { version: 3 },
      actions: [{ _instance_id: 'i1' }],
    });
  });

  it('an action query answer with no actions is valid (seed 004: empty _dynamic_tools)', () => {
    expect(ActionQueryResponse.parse({ actions: [] })).toEqual({ actions: [] });
  });

  it('an mcp action source parses, so the service can answer UNSUPPORTED_ACTION_TYPE', () => {
    const answer = ActionQueryResponse.parse({
      actions: [{ parameters: {} }],
      action_source: { type: 'mcp' },
    });
    expect(answer.action_source?.type).toBe('mcp');
  });

  it('a tool detail needs a name and an api_spec; parameters need a legal location', () => {
    expect(rejectionPaths(ToolDetailResponse, { description: 'd' })).toEqual(['name', 'api_spec']);
    const badLocation = { name: 'n', api_spec: { parameters: [{ name: 'q', in: 'body' }] } };
    expect(rejectionPaths(ToolDetailResponse, badLocation)).toEqual(['api_spec.parameters[0].in']);
  });
});

describe('seed 004 phase 3', () => {
  it('an action query answer carries its action type with a condition left for recall to read, whatever its shape', () => {
    const answer = ActionQueryResponse.parse({
      action_type: { id: 'at', name: 'plan', condition: { operation: 'knn', anything: [1] }, affect: {} },
      actions: [],
    });
    expect(answer.action_type).toMatchObject({ id: 'at', condition: { operation: 'knn' }, affect: {} });
  });

  it('a plural recall answer keeps the failures of the identities that failed beside the tools', () => {
    const failure = {
      index: 1,
      unique_identity: { disease_id: 'd2' },
      code: 'SERVICE_UNAVAILABLE',
      message: 'ontology-query answered 503',
      detail: { status: 503 },
    };
    expect(ActionRecallResponse.parse({ _dynamic_tools: [], failures: [failure] }).failures).toEqual([
      failure,
    ]);
    expect(
      ActionRecallResponse.safeParse({ _dynamic_tools: [], failures: [{ ...failure, code: 'NOPE' }] })
        .success,
    ).toBe(false);
  });
});
