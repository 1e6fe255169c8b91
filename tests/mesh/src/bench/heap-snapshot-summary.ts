/**
 * Reading V8 heap snapshots (`.heapsnapshot` JSON) into live bytes by kind of object, and the difference
 * of two: what a process holds more in one than in the other. Pure; for the executor's heap-per-task
 * bench.
 */
import { readFileSync } from 'node:fs';

interface RawSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Live bytes and object counts by kind (`<type>` or `<type> <constructor>`). */
export type HeapByKind = Map<string, { bytes: number; count: number }>;

const STRING_TYPES = new Set(['string', 'concatenated string', 'sliced string']);

export function heapByKind(path: string): HeapByKind {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as RawSnapshot;
  const fields = raw.snapshot.meta.node_fields;
  const types = raw.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const byKind: HeapByKind = new Map();
  for (let i = 0; i < raw.nodes.length; i += width) {
    const type = types[raw.nodes[i + typeAt] ?? 0] ?? '?';
    const kind = STRING_TYPES.has(type)
      ? 'string'
      : type === 'object' || type === 'native'
        ? `${type} ${raw.strings[raw.nodes[i + nameAt] ?? 0] ?? '?'}`
        : type;
    const entry = byKind.get(kind) ?? { bytes: 0, count: 0 };
    entry.bytes += raw.nodes[i + sizeAt] ?? 0;
    entry.count += 1;
    byKind.set(kind, entry);
  }
  return byKind;
}

export interface HeapGrowth {
  totalBytes: number;
  /** Kinds by bytes grown, largest first. */
  kinds: { kind: string; bytes: number; count: number }[];
}

/** What `after` holds beyond `before`. */
export function heapGrowth(before: HeapByKind, after: HeapByKind): HeapGrowth {
  const kinds = [...new Set([...before.keys(), ...after.keys()])].map((kind) => ({
    kind,
    bytes: (after.get(kind)?.bytes ?? 0) - (before.get(kind)?.bytes ?? 0),
    count: (after.get(kind)?.count ?? 0) - (before.get(kind)?.count ?? 0),
  }));
  kinds.sort((a, b) => b.bytes - a.bytes);
  return { totalBytes: kinds.reduce((sum, kind) => sum + kind.bytes, 0), kinds };
}
