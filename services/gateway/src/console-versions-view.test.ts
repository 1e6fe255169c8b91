/**
 * The console's agent versions view (console/versions-view.js, plain JavaScript served to the browser) run
 * in Node: how a kept version and a diff entry of `GET /v1/admin/agents/:id/diff` read on the page, and
 * which keys are offered the panel at all.
 */
import { diffJson } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';

interface DiffRow {
  path: string;
  op: string;
  sign: string;
  from: string;
  to: string;
}
const view = (await import(new URL('../console/versions-view.js', import.meta.url).href)) as {
  shortDigest: (digest: unknown) => string;
  formatCreated: (createdAt: unknown) => string;
  formatValue: (value: unknown) => string;
  versionRows: (list: { versions: Record<string, unknown>[] }) => Record<string, unknown>[];
  diffRows: (changes: unknown[]) => DiffRow[];
  diffSummary: (diff: { from: { version: number }; to: { version: number }; changes: unknown[] }) => string;
  mayManageAgents: (kind: string | undefined) => boolean;
};

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

describe('console versions view', () => {
  it('when versions are listed, each row reads as its number, a 12-digit digest, its UTC date and time, and whether it is current', () => {
    const rows = view.versionRows({
      versions: [
        { version: 3, digest: DIGEST, created_at: '2026-11-28T03:20:05.123Z', current: false },
        { version: 2, digest: DIGEST, created_at: '2026-11-27T23:59:59+01:00', current: true },
        { version: 1, digest: DIGEST, current: false },
      ],
    });
    expect(rows).toEqual([
      {
        version: 3,
        digest: DIGEST,
        digestShort: 'sha256:0123456789ab',
        created: '2026-11-28 03:20:05 UTC',
        current: false,
      },
      {
        version: 2,
        digest: DIGEST,
        digestShort: 'sha256:0123456789ab',
        created: '2026-11-27 22:59:59 UTC',
        current: true,
      },
      { version: 1, digest: DIGEST, digestShort: 'sha256:0123456789ab', created: '–', current: false },
    ]);
    expect(view.formatCreated('not a date')).toBe('–');
    expect(view.shortDigest(undefined)).toBe('–');
  });

  it("when two definitions differ, the diff API's entries read as path, change and both sides as JSON, with a dash for the side that has none", () => {
    const from = {
      system_prompt: 'You look up companies.',
      model: { model_name: 'm1', temperature: 0.2 },
      tools: ['a'],
    };
    const to = {
      system_prompt: 'You look up "companies" carefully.',
      model: { model_name: 'm1', max_tokens: 100 },
      tools: ['a', 'b'],
    };
    expect(view.diffRows(diffJson(from, to))).toEqual([
      { path: '/model/max_tokens', op: 'added', sign: '+', from: '–', to: '100' },
      { path: '/model/temperature', op: 'removed', sign: '−', from: '0.2', to: '–' },
      {
        path: '/system_prompt',
        op: 'changed',
        sign: '~',
        from: '"You look up companies."',
        to: '"You look up \\"companies\\" carefully."',
      },
      { path: '/tools', op: 'changed', sign: '~', from: '["a"]', to: '["a","b"]' },
    ]);
    expect(view.diffRows([{ path: '', op: 'changed', from: 1, to: null }])).toEqual([
      { path: '(whole definition)', op: 'changed', sign: '~', from: '1', to: 'null' },
    ]);
  });

  it('when a diff is summed up, it counts the differences (one, several, none) and names both versions', () => {
    const stamp = (version: number) => ({ version });
    expect(view.diffSummary({ from: stamp(1), to: stamp(3), changes: [{}, {}] })).toBe(
      '2 differences between version 1 and version 3.',
    );
    expect(view.diffSummary({ from: stamp(2), to: stamp(1), changes: [{}] })).toBe(
      '1 difference between version 2 and version 1.',
    );
    expect(view.diffSummary({ from: stamp(2), to: stamp(2), changes: [] })).toBe(
      'No differences between version 2 and version 2.',
    );
  });

  it("when the key is an account's API key (or not known yet), the panel makes no management call; an admin or trusted caller may", () => {
    expect(view.mayManageAgents('admin')).toBe(true);
    expect(view.mayManageAgents('trusted')).toBe(true);
    expect(view.mayManageAgents('api_key')).toBe(false);
    expect(view.mayManageAgents(undefined)).toBe(false);
  });
});
