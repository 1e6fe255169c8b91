/**
 * Paging of A2A `ListTasks`: a page token names where the previous page ended, as the last task's
 * (`updated_at`, trace id), and the next page holds the tasks before it in that order, newest first. The
 * token is opaque to clients (base64url JSON) and checked like any input: one a ListTasks answer did not
 * give is INVALID_REQUEST. A task written again between two pages moves to the front and is not repeated
 * on a later page.
 */
import { IsoDateTime, TraceId, type TaskStatusRecord } from '@agentmesh/protocol';
import { z } from 'zod';

export interface ListCursor {
  readonly updatedAt: string;
  readonly traceId: string;
}

const CursorJson = z.object({ u: IsoDateTime, t: TraceId }).strict();

export function listCursorToken(record: Pick<TaskStatusRecord, 'updated_at' | 'trace_id'>): string {
  return Buffer.from(JSON.stringify({ u: record.updated_at, t: record.trace_id })).toString('base64url');
}

/** The cursor a page token names; undefined when it is not a token a ListTasks answer gave. */
export function listCursorOf(token: string): ListCursor | undefined {
  if (token.length > 256 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = CursorJson.safeParse(json);
  return parsed.success ? { updatedAt: parsed.data.u, traceId: parsed.data.t } : undefined;
}

/** Newest first: by `updated_at`, then by trace id, both descending. */
export function newestFirst(
  a: Pick<TaskStatusRecord, 'updated_at' | 'trace_id'>,
  b: Pick<TaskStatusRecord, 'updated_at' | 'trace_id'>,
): number {
  const byTime = Date.parse(b.updated_at) - Date.parse(a.updated_at);
  if (byTime !== 0) return byTime;
  return a.trace_id < b.trace_id ? 1 : a.trace_id > b.trace_id ? -1 : 0;
}

/** Whether the record comes after the cursor in newest-first order (so on a later page). */
export function isPastCursor(
  record: Pick<TaskStatusRecord, 'updated_at' | 'trace_id'>,
  cursor: ListCursor,
): boolean {
  return newestFirst({ updated_at: cursor.updatedAt, trace_id: cursor.traceId }, record) < 0;
}
