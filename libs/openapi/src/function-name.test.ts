// Function names: legal for OpenAI (^[a-zA-Z0-9_-]{1,64}$), stable, and unique within a document.

import { describe, expect, it } from 'vitest';
import { convertDocument } from './document-converter.js';
import {
  FunctionNameRegistry,
  isValidFunctionName,
  operationFunctionName,
  toFunctionName,
} from './function-name.js';
import { openApi } from './test-support/documents.js';

describe('function names', () => {
  it('when operationIds hold slashes, dots or spaces (GitHub, Jira, petstore), they are sanitised to underscores', () => {
    expect(toFunctionName('repos/get')).toBe('repos_get');
    expect(toFunctionName('com.atlassian.jira.rest.v2.issue.IssueResource.getIssue_get')).toBe(
      'com_atlassian_jira_rest_v2_issue_IssueResource_getIssue_get',
    );
    expect(toFunctionName('find pet by id')).toBe('find_pet_by_id');
    expect(toFunctionName('apps/create-installation-access-token')).toBe(
      'apps_create-installation-access-token',
    );
  });

  it('when there is no operationId, the name comes from method and path', () => {
    expect(operationFunctionName(undefined, 'GET', '/guilds/{guild_id}/channels')).toBe(
      'get_guilds_guild_id_channels',
    );
  });

  it('when a name is longer than 64 characters, it keeps a prefix and a stable hash of the whole', () => {
    const long = `Post${'VeryLongResourceName'.repeat(5)}`;
    const name = toFunctionName(long);
    expect(name).toHaveLength(64);
    expect(isValidFunctionName(name)).toBe(true);
    expect(name).toMatch(/^PostVeryLongResourceName.*_[0-9a-f]{8}$/);
    expect(toFunctionName(long)).toBe(name);
    expect(toFunctionName(`${long}X`)).not.toBe(name);
  });

  it('when a name has no usable character (a Chinese title), it becomes a hashed name, different per text', () => {
    const a = toFunctionName('按单个对象类查询对象实例');
    expect(a).toMatch(/^fn_[0-9a-f]{8}$/);
    expect(toFunctionName('生成治疗方案')).not.toBe(a);
  });

  it('when two operations would get the same name (even differing in case), the second is numbered', () => {
    const registry = new FunctionNameRegistry();
    expect([registry.claim('get_pets'), registry.claim('get_pets'), registry.claim('GET_PETS')]).toEqual([
      'get_pets',
      'get_pets_2',
      'GET_PETS_3',
    ]);
    const document = openApi({
      '/a': { get: { operationId: 'repos/get' } },
      '/b': { get: { operationId: 'repos.get' } },
    });
    expect(convertDocument(document).operations.map((o) => o.name)).toEqual(['repos_get', 'repos_get_2']);
  });
});
