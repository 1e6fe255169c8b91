/**
 * The console's task list (console/task-list.js, plain JavaScript served to the browser) run in Node: the
 * query its search form sends and what a row shows.
 */
import { describe, expect, it } from 'vitest';

const { taskListQuery, taskRowCells } = (await import(
  new URL('../console/task-list.js', import.meta.url).href
)) as {
  taskListQuery: (fields: { get(name: string): string | null }) => URLSearchParams;
  taskRowCells: (task: Record<string, unknown>) => string[];
};

const form = (values: Record<string, string>) => ({ get: (name: string) => values[name] ?? null });

describe('console task list', () => {
  it('when filters are filled in, the query carries each, dates as the first and last instant of those local days; empty ones are left out', () => {
    const query = taskListQuery(
      form({
        q: '  ByteDance ',
        status: 'error',
        workflow_id: '',
        error_code: 'llm_error',
        since: '2026-11-01',
        until: '2026-11-02',
      }),
    );
    expect(query.get('limit')).toBe('20');
    expect(query.get('q')).toBe('ByteDance');
    expect(query.get('status')).toBe('error');
    expect(query.has('workflow_id')).toBe(false);
    expect(query.get('error_code')).toBe('LLM_ERROR');
    expect(new Date(query.get('since')!).getTime()).toBe(new Date(2026, 10, 1).getTime());
    expect(new Date(query.get('until')!).getTime()).toBe(new Date(2026, 10, 2, 23, 59, 59, 999).getTime());
    expect(taskListQuery(form({})).toString()).toBe('limit=20');
    expect(() => taskListQuery(form({ since: '2026-11-03', until: '2026-11-02' }))).toThrow(/From/);
  });

  it('when a task is listed, its row shows the start of its message, the date as well as the time, duration, tokens and cost', () => {
    const submitted = '2026-11-28T09:15:00.000Z';
    const done = taskRowCells({
      trace_id: 'a'.repeat(32),
      workflow_id: 'company_agent',
      agent_version: 3,
      status: 'done',
      submitted_at: submitted,
      updated_at: '2026-11-28T09:15:03.000Z',
      preview: 'When was ByteDance founded?',
      duration_ms: 2_400,
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      cost_usd: 0.0021,
    });
    expect(done[0]).toBe('a'.repeat(12));
    expect(done[1]).toBe('When was ByteDance founded?');
    expect(done[2]).toBe('company_agent@3');
    expect(done[3]).toBe('done');
    // The date is there, not only the time.
    expect(done[4]).toContain('2026');
    expect(done.slice(5)).toEqual(['2.4 s', '15', '$0.0021', '']);

    const failed = taskRowCells({
      trace_id: 'b'.repeat(32),
      workflow_id: 'w',
      status: 'error',
      submitted_at: submitted,
      updated_at: '2026-11-28T09:15:01.500Z',
      error: { code: 'LLM_ERROR', message: 'refused' },
    });
    expect(failed[3]).toBe('error');
    expect(failed.slice(5)).toEqual(['~1.5 s', '–', '–', 'LLM_ERROR']);
  });
});
