// Function names: the protocol's one naming contract (legal, stable), applied to operations, and unique
// within a document.

import { isFunctionName, toFunctionName } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { convertApiSpec, convertDocument, listOperations } from './document-converter.js';
import { FunctionNameRegistry, operationFunctionName } from './function-name.js';
import { openApi } from './__fixtures__/documents.js';

describe('function names', () => {
  it('when an operationId holds slashes, dots or spaces, the operation is named exactly as the protocol names that id', () => {
    const ids = [
      'repos/get',
      'com.atlassian.jira.rest.v2.issue.IssueResource.getIssue_get',
      'find pet by id',
      'core:execute-python-script',
      '根据单个对象类查询对象实例',
      `Post${'VeryLongResourceName'.repeat(5)}`,
    ];
    const document = openApi(
      Object.fromEntries(ids.map((operationId, i) => [`/p${i}`, { get: { operationId } }])),
    );
    const names = listOperations(document).map((operation) => operation.name);
    expect(names).toEqual(ids.map((id) => toFunctionName(id)));
    for (const name of names) expect(isFunctionName(name), name).toBe(true);
  });

  it('when seed 004 names an api_spec, the name is the protocol mapping of it', () => {
    const spec = { method: 'get', path: '/x', parameters: [] };
    expect(convertApiSpec(spec, { name: 'ns:a.b' }).name).toBe(toFunctionName('ns:a.b'));
  });

  it('when there is no operationId, the name reads method and path without a hash', () => {
    expect(operationFunctionName(undefined, 'GET', '/guilds/{guild_id}/channels')).toBe(
      'get_guilds_guild_id_channels',
    );
    expect(operationFunctionName(undefined, 'get', '/files/{file_id}#get_shared_link')).toBe(
      'get_files_file_id_get_shared_link',
    );
  });

  it('when two operations would get the same name (even differing in case), the second is numbered', () => {
    const registry = new FunctionNameRegistry();
    expect([registry.claim('get_pets'), registry.claim('get_pets'), registry.claim('GET_PETS')]).toEqual([
      'get_pets',
      'get_pets_2',
      'GET_PETS_3',
    ]);
    const document = openApi({
      '/a': { get: { operationId: 'pets' } },
      '/b': { get: { operationId: 'PETS' } },
    });
    expect(convertDocument(document).operations.map((o) => o.name)).toEqual(['pets', 'PETS_2']);
  });
});
