/**
 * The console's schedules view (console/schedules-view.js, plain JavaScript served to the browser) run in
 * Node: how a schedule's timing reads in its row.
 */
import { describe, expect, it } from 'vitest';

const { scheduleTiming } = (await import(new URL('../console/schedules-view.js', import.meta.url).href)) as {
  scheduleTiming: (schedule: Record<string, unknown>) => string;
};

describe('console schedules view', () => {
  it('when a schedule is a cron in a zone it reads as both; a fixed interval reads in seconds; no zone is UTC', () => {
    expect(scheduleTiming({ cron: '0 8 * * 1-5', timezone: 'Europe/Berlin' })).toBe(
      '0 8 * * 1-5 (Europe/Berlin)',
    );
    expect(scheduleTiming({ cron: '*/5 * * * *' })).toBe('*/5 * * * * (UTC)');
    expect(scheduleTiming({ interval_seconds: 300 })).toBe('every 300 s');
  });
});
