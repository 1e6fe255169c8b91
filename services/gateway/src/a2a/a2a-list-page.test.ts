import { describe, expect, it } from 'vitest';
import { isPastCursor, listCursorOf, listCursorToken, newestFirst } from './a2a-list-page.js';

const task = (updatedAt: string, traceId: string) => ({ updated_at: updatedAt, trace_id: traceId });

describe('paging A2A ListTasks', () => {
  it("a page's token names its last task, and only tasks older than it (or as old, with a lower id) come after", () => {
    const last = task('2026-11-28T10:00:00.000Z', 'b'.repeat(32));
    const cursor = listCursorOf(listCursorToken(last))!;
    expect(cursor).toEqual({ updatedAt: last.updated_at, traceId: last.trace_id });
    expect(isPastCursor(task('2026-11-28T09:59:59.999Z', 'f'.repeat(32)), cursor)).toBe(true);
    expect(isPastCursor(task(last.updated_at, 'a'.repeat(32)), cursor)).toBe(true);
    expect(isPastCursor(last, cursor)).toBe(false);
    expect(isPastCursor(task(last.updated_at, 'c'.repeat(32)), cursor)).toBe(false);
    expect(isPastCursor(task('2026-11-28T10:00:00.001Z', '0'.repeat(32)), cursor)).toBe(false);
  });

  it('newest first orders by time, then by trace id, both descending', () => {
    const tasks = [
      task('2026-11-28T10:00:00.000Z', 'a'.repeat(32)),
      task('2026-11-28T11:00:00.000Z', 'a'.repeat(32)),
      task('2026-11-28T10:00:00.000Z', 'c'.repeat(32)),
    ];
    expect(
      tasks.sort(newestFirst).map((one) => `${one.updated_at.slice(11, 13)} ${one.trace_id[0]}`),
    ).toEqual(['11 a', '10 c', '10 a']);
  });

  it('a token a ListTasks answer did not give names no cursor', () => {
    for (const token of [
      'not-a-token',
      Buffer.from('{"u":"yesterday","t":"x"}').toString('base64url'),
      Buffer.from('{"u":"2026-11-28T10:00:00Z","t":"' + 'a'.repeat(32) + '","extra":1}').toString(
        'base64url',
      ),
      'a'.repeat(300),
      'has spaces',
    ]) {
      expect(listCursorOf(token), token).toBeUndefined();
    }
  });
});
