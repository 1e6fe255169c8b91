/* global URLSearchParams */
// The console's task list: the `GET /v1/tasks` query its search form asks for, and what a row shows of a
// task's status record (the start of its message, date and time, duration, tokens, cost). Pure: the
// page builds the rows (console.js); services/gateway/src/console-task-list.test.ts runs this in Node.

import { formatDuration } from './task-waterfall.js';

/** Rows one read asks for. */
export const TASK_LIST_LIMIT = 20;

/**
 * The query string for the search form's fields (a FormData or any `get(name)`): empty fields are left
 * out; the dates (`YYYY-MM-DD`, days in the browser's zone) become the first and last instant of those
 * days; an error code is upper-cased. Throws with a person's message when From is after To.
 */
export function taskListQuery(fields, limit = TASK_LIST_LIMIT) {
  const value = (name) => String(fields.get(name) ?? '').trim();
  const query = new URLSearchParams({ limit: String(limit) });
  if (value('q')) query.set('q', value('q'));
  if (value('status')) query.set('status', value('status'));
  if (value('workflow_id')) query.set('workflow_id', value('workflow_id'));
  if (value('error_code')) query.set('error_code', value('error_code').toUpperCase());
  const since = value('since') ? dayStart(value('since')) : undefined;
  const until = value('until') ? dayEnd(value('until')) : undefined;
  if (since && until && since > until) throw new Error('The From day is after the To day.');
  if (since) query.set('since', since.toISOString());
  if (until) query.set('until', until.toISOString());
  return query;
}

const dayParts = (day) => day.split('-').map(Number);

function dayStart(day) {
  const [year, month, date] = dayParts(day);
  return new Date(year, month - 1, date, 0, 0, 0, 0);
}

function dayEnd(day) {
  const [year, month, date] = dayParts(day);
  return new Date(year, month - 1, date, 23, 59, 59, 999);
}

/** A date and time as this browser writes them (both: a list spans days). */
export function formatDateTime(iso) {
  if (!iso) return '–';
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/**
 * A task's cells, as text, in the list's column order: id, message, agent (with the version it ran),
 * status, submitted (date and time), duration, tokens, cost, error code. Duration is the
 * executor's for a finished task; for one without (failed, cancelled, running) the time from submit to its
 * last update, marked `~`.
 */
export function taskRowCells(task) {
  const agent = task.agent_version ? `${task.workflow_id}@${task.agent_version}` : task.workflow_id;
  const since = task.submitted_at ?? task.updated_at;
  const duration =
    task.duration_ms !== undefined
      ? formatDuration(task.duration_ms)
      : task.status === 'queued'
        ? '–'
        : `~${formatDuration(Math.max(0, Date.parse(task.updated_at) - Date.parse(since)))}`;
  return [
    task.trace_id.slice(0, 12),
    task.preview ?? '',
    agent,
    task.status,
    formatDateTime(since),
    duration,
    task.usage ? String(task.usage.total_tokens) : '–',
    task.cost_usd !== undefined ? `$${task.cost_usd.toFixed(4)}` : '–',
    task.error?.code ?? '',
  ];
}
