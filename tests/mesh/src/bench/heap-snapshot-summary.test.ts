import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { heapByKind, heapGrowth } from './heap-snapshot-summary.js';

/** A heap snapshot in V8's layout: nodes as flat [type, name, self_size] triples. */
function snapshotFile(nodes: [type: number, name: number, size: number][]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'heap-')), 'x.heapsnapshot');
  writeFileSync(
    path,
    JSON.stringify({
      snapshot: {
        meta: { node_fields: ['type', 'name', 'self_size'], node_types: [['hidden', 'string', 'object']] },
      },
      nodes: nodes.flat(),
      strings: ['', 'Map', 'Vault'],
    }),
  );
  return path;
}

describe('heap snapshot summary', () => {
  it('counts live bytes by kind, objects by constructor, and what the later snapshot holds more', () => {
    const idle = heapByKind(
      snapshotFile([
        [2, 1, 100],
        [1, 0, 40],
      ]),
    );
    const loaded = heapByKind(
      snapshotFile([
        [2, 1, 100],
        [2, 1, 60],
        [2, 2, 500],
        [1, 0, 40],
        [1, 0, 8],
      ]),
    );
    expect(idle.get('object Map')).toEqual({ bytes: 100, count: 1 });
    const growth = heapGrowth(idle, loaded);
    expect(growth.totalBytes).toBe(568);
    expect(growth.kinds.slice(0, 3)).toEqual([
      { kind: 'object Vault', bytes: 500, count: 1 },
      { kind: 'object Map', bytes: 60, count: 1 },
      { kind: 'string', bytes: 8, count: 1 },
    ]);
  });
});
