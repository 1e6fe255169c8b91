/* global document */
// Where a task's time went, as a waterfall computed from its events alone: one row per attempt, model
// turn (step_finished), tool call (tool_start → tool_result), approval (approval_requested →
// approval_decided), sub-task (subtask_started → subtask_finished) and error, each with its start and
// end (milliseconds from the task's origin), duration, and tokens and cost where the events carry them.
// `waterfallRows` is pure (unit-tested in Node); `renderWaterfall` draws rows as bars in the page.
//
// A model turn has no start event: it runs from the attempt's last boundary before its step_finished
// (the attempt's first event, the previous turn, a tool result, a decided approval or a finished
// sub-task), and the task's first turn from the origin (its submit time when known, so it includes the
// time spent queued and assembled).

/** Events that end something a model turn may have waited for. */
const BOUNDARIES = new Set(['step_finished', 'tool_result', 'approval_decided', 'subtask_finished']);

const at = (event) => Date.parse(event.ts);

/**
 * The waterfall of `events` (a task's events, any order, duplicates by seq ignored). `origin` is an ISO
 * time the offsets count from (the task's submit time); the first event's time when absent or later.
 * Answers `{ rows, totalMs, tokens, costUsd }`; rows are in start order, each
 * `{ kind, label, attempt, startMs, endMs, durationMs, tokens?, costUsd?, estimated?, state?, depth }`.
 */
export function waterfallRows(events, origin) {
  const seen = new Set();
  const sorted = [...events]
    .filter((event) => (seen.has(event.seq) ? false : (seen.add(event.seq), true)))
    .sort((a, b) => a.seq - b.seq);
  if (sorted.length === 0) return { rows: [], totalMs: 0, tokens: 0, costUsd: undefined };
  const firstAt = at(sorted[0]);
  const originAt = Math.min(origin === undefined ? firstAt : Date.parse(origin), firstAt);
  const lastAt = Math.max(...sorted.map(at));
  const offset = (time) => Math.max(0, time - originAt);

  const rows = [];
  const open = new Map();
  const attempts = new Map();
  /** Per attempt, when its last boundary was: where its next model turn starts. */
  const boundary = new Map();
  let tokens = 0;
  let costUsd;

  const row = (fields) => {
    const item = { depth: 0, ...fields, durationMs: Math.max(0, fields.endMs - fields.startMs) };
    rows.push(item);
    return item;
  };

  for (const event of sorted) {
    const time = at(event);
    const attempt = event.attempt;
    let span = attempts.get(attempt);
    if (span === undefined) {
      span = { first: time, last: time, tokens: 0, costUsd: undefined, resumed: undefined };
      attempts.set(attempt, span);
      // An attempt's first turn starts with it; the task's very first one at the origin.
      boundary.set(attempt, attempts.size === 1 ? originAt : time);
    }
    span.last = Math.max(span.last, time);
    const data = event.data ?? {};
    switch (event.type) {
      case 'attempt_started':
        span.resumed = data;
        break;
      case 'step_finished': {
        const stepTokens = data.usage?.total_tokens ?? 0;
        span.tokens += stepTokens;
        if (data.cost_usd !== undefined) span.costUsd = (span.costUsd ?? 0) + data.cost_usd;
        tokens = data.total_usage?.total_tokens ?? tokens + stepTokens;
        costUsd = data.total_cost_usd ?? costUsd;
        row({
          kind: 'model',
          label: `model turn ${data.step}${data.finish_reason ? ` (${data.finish_reason})` : ''}`,
          attempt,
          startMs: offset(boundary.get(attempt)),
          endMs: offset(time),
          tokens: stepTokens,
          ...(data.cost_usd === undefined ? {} : { costUsd: data.cost_usd }),
          ...(data.usage_reported === false ? { estimated: true } : {}),
        });
        break;
      }
      case 'tool_start':
        open.set(
          `tool:${data.call_id}`,
          row({
            kind: 'tool',
            label: `tool ${data.tool}`,
            attempt,
            startMs: offset(time),
            endMs: offset(lastAt),
            state: 'running',
          }),
        );
        break;
      case 'tool_result': {
        const started = open.get(`tool:${data.call_id}`);
        const item =
          started ??
          row({
            kind: 'tool',
            label: `tool ${data.tool}`,
            attempt,
            startMs: offset(time - data.duration_ms),
            endMs: offset(time),
          });
        item.endMs = offset(time);
        item.durationMs = data.duration_ms;
        item.state = data.ok ? 'ok' : `failed ${data.error?.code ?? ''}`.trim();
        open.delete(`tool:${data.call_id}`);
        break;
      }
      case 'approval_requested':
        open.set(
          `approval:${data.call_id}`,
          row({
            kind: 'approval',
            label: `approval of ${data.tool}`,
            attempt,
            startMs: offset(time),
            endMs: offset(lastAt),
            state: 'waiting',
          }),
        );
        break;
      case 'approval_decided': {
        const item = open.get(`approval:${data.call_id}`);
        if (item !== undefined) {
          item.endMs = offset(time);
          item.durationMs = item.endMs - item.startMs;
          item.state = data.approved ? 'approved' : 'denied';
          open.delete(`approval:${data.call_id}`);
        }
        break;
      }
      case 'subtask_started':
        open.set(
          `subtask:${data.call_id}`,
          row({
            kind: 'subtask',
            label: `sub-task ${data.workflow_id} ${data.subtask_trace_id.slice(0, 8)}`,
            attempt,
            startMs: offset(time),
            endMs: offset(lastAt),
            state: 'running',
            depth: 1,
            traceId: data.subtask_trace_id,
          }),
        );
        break;
      case 'subtask_finished': {
        const item = open.get(`subtask:${data.call_id}`);
        if (item !== undefined) {
          item.endMs = offset(time);
          item.durationMs = item.endMs - item.startMs;
          item.state = data.error ? `${data.status} ${data.error.code}` : data.status;
          if (data.usage) item.tokens = data.usage.total_tokens;
          if (data.cost_usd !== undefined) item.costUsd = data.cost_usd;
          open.delete(`subtask:${data.call_id}`);
        }
        break;
      }
      case 'error':
        row({
          kind: 'error',
          label: `error ${data.code}`,
          attempt,
          startMs: offset(time),
          endMs: offset(time),
          state: data.retryable ? 'retryable' : 'final',
        });
        break;
      case 'done':
        if (data.usage) tokens = data.usage.total_tokens;
        if (data.cost_usd !== undefined) costUsd = data.cost_usd;
        break;
    }
    if (BOUNDARIES.has(event.type)) boundary.set(attempt, time);
  }

  // One row per attempt, spanning its events; a later attempt is a retry (resumed after an earlier died).
  const firstAttempt = sorted[0].attempt;
  for (const [attempt, span] of attempts) {
    const resumed = span.resumed;
    // The first attempt runs from the origin (its first event may be its first turn's end).
    const start = attempt === firstAttempt ? originAt : span.first;
    rows.push({
      kind: 'attempt',
      label:
        resumed === undefined
          ? `attempt ${attempt}`
          : `attempt ${attempt} (retry: ${resumed.resumed_steps} turns, ${resumed.resumed_tool_results} tool results taken over)`,
      attempt,
      startMs: offset(start),
      endMs: offset(span.last),
      durationMs: Math.max(0, span.last - start),
      tokens: span.tokens,
      ...(span.costUsd === undefined ? {} : { costUsd: span.costUsd }),
      depth: 0,
    });
  }
  // Start order; an attempt before what happened in it.
  const rank = (item) => (item.kind === 'attempt' ? 0 : 1);
  rows.sort((a, b) => a.startMs - b.startMs || rank(a) - rank(b) || a.attempt - b.attempt);
  const done = sorted.find((event) => event.type === 'done');
  return {
    rows,
    totalMs: done?.data?.duration_ms ?? offset(lastAt),
    spanMs: offset(lastAt),
    tokens,
    costUsd,
  };
}

/** `ms` as people read it: 850 ms, 2.4 s, 3 min 5 s. */
export function formatDuration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Tokens and cost as a row shows them ('' when neither is known). */
export function formatUsage(tokens, costUsd, estimated) {
  const parts = [];
  if (tokens !== undefined) parts.push(`${estimated ? '~' : ''}${tokens} tokens`);
  if (costUsd !== undefined) parts.push(`$${costUsd.toFixed(4)}`);
  return parts.join(' · ');
}

/**
 * Draws `waterfall` (from waterfallRows) into `list` (an <ol>): one item per row with its label, the bar
 * (positioned through the CSSOM, which the page's CSP allows, unlike style attributes), duration and
 * usage. `onOpenTask` makes a sub-task's label a button that opens it.
 */
export function renderWaterfall(list, waterfall, onOpenTask) {
  const scale = Math.max(1, waterfall.spanMs ?? waterfall.totalMs);
  const items = waterfall.rows.map((item) => {
    const li = document.createElement('li');
    li.className = `wf-row wf-${item.kind}`;
    li.dataset.kind = item.kind;
    const label = document.createElement('span');
    label.className = 'wf-label';
    if (item.depth > 0) label.classList.add('wf-nested');
    if (item.kind === 'subtask' && onOpenTask && item.traceId) {
      const open = document.createElement('button');
      open.type = 'button';
      open.textContent = item.label;
      open.setAttribute('aria-label', `Open sub-task ${item.traceId}`);
      open.addEventListener('click', () => onOpenTask(item.traceId));
      label.append(open);
    } else {
      label.textContent = item.label;
    }
    const track = document.createElement('span');
    track.className = 'wf-track';
    track.setAttribute('aria-hidden', 'true');
    const bar = document.createElement('span');
    bar.className = 'wf-bar';
    bar.style.left = `${(100 * item.startMs) / scale}%`;
    bar.style.width = `max(2px, ${(100 * Math.max(0, item.endMs - item.startMs)) / scale}%)`;
    track.append(bar);
    const facts = document.createElement('span');
    facts.className = 'wf-facts';
    const usage = formatUsage(item.tokens, item.costUsd, item.estimated);
    facts.textContent = [
      `+${formatDuration(item.startMs)}`,
      formatDuration(item.durationMs),
      ...(usage ? [usage] : []),
      ...(item.state ? [item.state] : []),
    ].join(' · ');
    li.append(label, track, facts);
    return li;
  });
  list.replaceChildren(...items);
}
