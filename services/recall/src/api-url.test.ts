import { describe, expect, it } from 'vitest';
import { apiUrlFor } from './api-url.js';
import { DEFAULT_API_URL_TEMPLATE } from './config.js';
import { seedExample, SEED_ACTION_SOURCE } from './__fixtures__/seed-004.js';

describe('api_url template (seed 004 §4.2)', () => {
  it('when filled from the seed action source, the default template gives the seed api_url', () => {
    const url = apiUrlFor(DEFAULT_API_URL_TEMPLATE, {
      boxId: SEED_ACTION_SOURCE.box_id,
      toolId: SEED_ACTION_SOURCE.tool_id,
    });
    expect(url).toBe(seedExample('004-s11.1-response.json').expected.api_url);
  });

  it('when an id holds "/", "?" or "#", it is percent-encoded and cannot change the URL’s shape', () => {
    const url = new URL(
      apiUrlFor('http://proxy.test/box/{box_id}/tool/{tool_id}', { boxId: '../x', toolId: 'a?b#c' }),
    );
    expect(url.pathname).toBe('/box/..%2Fx/tool/a%3Fb%23c');
    expect(url.search).toBe('');
    expect(url.hash).toBe('');
  });

  it.each(['..', '.', '%2e', '.%2E'])(
    'when an id is %j, no api_url is built (a dot segment would climb out of the tool box path)',
    (toolId) => {
      expect(() =>
        apiUrlFor('http://proxy.test/box/{box_id}/tool/{tool_id}', { boxId: 'b', toolId }),
      ).toThrow(/dot segment/);
    },
  );
});
